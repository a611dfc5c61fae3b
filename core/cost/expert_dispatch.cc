#include "core/cost/expert_dispatch.h"

#include <algorithm>

namespace shardlab {
namespace {

// C(a, k) / C(c, k): the chance that k of c items picked uniformly all lie in a given a of them.
double AllAmong(int64_t a, int64_t c, int64_t k) {
  if (a < k) return 0;
  double ratio = 1;
  for (int64_t i = 0; i < k; ++i) ratio *= static_cast<double>(a - i) / static_cast<double>(c - i);
  return ratio;
}

}  // namespace

double ServerHitProbability(const ExpertRouting& r, int64_t servers) {
  const int64_t per_server = r.experts / servers;
  int64_t groups = r.groups, group_topk = r.group_topk;
  // Groups that neither fill whole servers nor split into them evenly: route as if ungrouped.
  if (groups % servers != 0 && servers % groups != 0) groups = group_topk = 1;
  if (groups >= servers) {
    // Each server holds groups / servers whole groups; the token's chosen
    // groups (each with one of its experts at least) miss them all, or not.
    const int64_t chosen = std::min(group_topk, r.experts_per_token);
    return 1 - AllAmong(groups - groups / servers, groups, chosen);
  }
  // Each group spans servers / groups servers: the server's group is chosen,
  // then the token's experts, uniform over the chosen groups' experts, reach it.
  const int64_t candidates = group_topk * (r.experts / groups);
  return static_cast<double>(group_topk) / static_cast<double>(groups) *
         (1 - AllAmong(candidates - per_server, candidates, r.experts_per_token));
}

double FlexCrossingShare(const ExpertRouting& r, int64_t servers) {
  if (servers <= 1) return 1;
  const double m = static_cast<double>(servers);
  const double alltoall = static_cast<double>(r.experts_per_token) * r.capacity_factor * (m - 1) / m;
  return std::min(1.0, (m - 1) * ServerHitProbability(r, servers) / alltoall);
}

}  // namespace shardlab
