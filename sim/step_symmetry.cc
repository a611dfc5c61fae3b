#include "sim/step_symmetry.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "sim/collective_flows.h"

namespace shardlab::sim {
namespace {

// The bytes collectives are expanded with to compare their flows: the
// flows' pattern does not depend on the size.
constexpr double kProbeBytes = 1 << 20;

std::vector<GroupUse> GroupUses(const StageProgram& stage) {
  std::set<GroupUse> uses;
  for (const auto* tasks : {&stage.forward, &stage.backward, &stage.weight_gradient, &stage.step_start})
    for (const Task& t : *tasks)
      if (t.kind == Task::Kind::kCollective) uses.insert({stage.stage, t.group, t.collective, t.algorithm});
  for (const GradientBucket& b : stage.buckets) uses.insert({stage.stage, b.group, b.collective, b.algorithm});
  return {uses.begin(), uses.end()};
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

std::string Brief(const std::vector<int64_t>& ranks) {
  if (ranks.size() <= 4) return fmt::format("[{}]", fmt::join(ranks, ","));
  return fmt::format("[{},{},...,{}] ({} ranks)", ranks[0], ranks[1], ranks.back(), ranks.size());
}

// The same permutation of slots on every server.
DevicePermutation SlotPermutation(int64_t devices, int64_t devices_per_server,
                                  const std::function<int64_t(int64_t)>& slot_image) {
  DevicePermutation g(devices);
  for (int64_t r = 0; r < devices; ++r) g[r] = r - r % devices_per_server + slot_image(r % devices_per_server);
  return g;
}

// Every stage's servers rotated by `shift` servers, slots kept (each server
// holds `devices_per_server` consecutive local devices of one stage).
DevicePermutation ServerRotation(const Plan& plan, int64_t devices_per_server, int64_t shift) {
  const int64_t per_stage = plan.devices_per_stage / devices_per_server;
  DevicePermutation g(plan.devices);
  for (int64_t r = 0; r < plan.devices; ++r) {
    const int64_t local = plan.placement.LocalOf(r);
    const int64_t server = local / devices_per_server, slot = local % devices_per_server;
    g[r] = plan.Rank(plan.placement.StageOf(r), (server + shift) % per_stage * devices_per_server + slot);
  }
  return g;
}

bool FlowLess(const Flow& a, const Flow& b) {
  return std::tie(a.src, a.dst, a.bytes) < std::tie(b.src, b.dst, b.bytes);
}
bool FlowEqual(const Flow& a, const Flow& b) { return a.src == b.src && a.dst == b.dst && a.bytes == b.bytes; }

// Whether `image` is `phases` with every flow's ends mapped by g, phase by
// phase, each phase's folded latency timed on a route of the same latency.
bool MapsOnto(const std::vector<Phase>& phases, const std::vector<Phase>& image, const DevicePermutation& g,
              const ClusterPlatform& platform) {
  if (phases.size() != image.size()) return false;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& p = phases[i];
    const Phase& q = image[i];
    if (p.extra_latency_steps != q.extra_latency_steps || p.flows.size() != q.flows.size()) return false;
    if (p.flows.empty()) continue;
    std::vector<Flow> mapped;
    mapped.reserve(p.flows.size());
    for (const Flow& f : p.flows) mapped.push_back({g[f.src], g[f.dst], f.bytes});
    std::vector<Flow> expected = q.flows;
    std::sort(mapped.begin(), mapped.end(), FlowLess);
    std::sort(expected.begin(), expected.end(), FlowLess);
    if (!std::equal(mapped.begin(), mapped.end(), expected.begin(), FlowEqual)) return false;
    if (p.extra_latency_steps > 0 && platform.RouteLatency(p.flows.front().src, p.flows.front().dst) !=
                                         platform.RouteLatency(q.flows.front().src, q.flows.front().dst))
      return false;
  }
  return true;
}

// Why g does not carry the step onto itself; empty when it does.
std::string CheckPlan(const StepShape& step, const DevicePermutation& g, const ClusterPlatform& platform) {
  const Plan& plan = *step.plan;
  std::vector<int64_t> lane_image(step.lane_size.size(), -1);
  for (int64_t r = 0; r < plan.devices; ++r) {
    if (plan.placement.StageOf(g[r]) != plan.placement.StageOf(r))
      return fmt::format("it moves rank {} to another pipeline stage", r);
    int64_t& image = lane_image[step.lane_of_rank[r]];
    if (image == -1) image = step.lane_of_rank[g[r]];
    if (image != step.lane_of_rank[g[r]] || step.lane_size[image] != step.lane_size[step.lane_of_rank[r]])
      return fmt::format("it does not map the devices in lockstep with rank {} onto devices in lockstep", r);
  }
  // Pipeline transfers and dualpipe's exchanges go to the device in the same
  // place on the other stage: g must move a place alike on every stage.
  for (int64_t r = 0; r < plan.devices; ++r) {
    const int64_t local = plan.placement.LocalOf(r);
    if (plan.placement.LocalOf(g[r]) != plan.placement.LocalOf(g[plan.Rank(0, local)]))
      return fmt::format("it moves rank {} to a place on its stage other than its stage-0 peer's", r);
  }
  for (const StageProgram& stage : plan.stages) {
    const auto& groups = step.groups[stage.stage];
    std::set<int> mapped_specs;
    for (const GroupUse& use : GroupUses(stage)) {
      const GroupInstances& instances = groups[use.group];
      const bool check_members = mapped_specs.insert(use.group).second;
      for (const std::vector<int64_t>& members : instances.members) {
        const std::vector<int64_t>& image = instances.MembersOf(plan.placement.LocalOf(g[members.front()]));
        if (check_members) {
          std::vector<int64_t> mapped(members.size());
          for (size_t i = 0; i < members.size(); ++i) mapped[i] = g[members[i]];
          std::sort(mapped.begin(), mapped.end());
          std::vector<int64_t> sorted = image;
          std::sort(sorted.begin(), sorted.end());
          if (mapped != sorted)
            return fmt::format("it maps the group {} onto ranks that are not one of its groups", Brief(members));
        }
        if (step.InsideLane(members)) continue;
        const auto phases = ExpandCollective(use.collective, use.algorithm, kProbeBytes, members,
                                             step.devices_per_server, step.fidelity);
        const auto image_phases =
            ExpandCollective(use.collective, use.algorithm, kProbeBytes, image, step.devices_per_server, step.fidelity);
        if (MapsOnto(phases, image_phases, g, platform)) continue;
        return fmt::format("the {} {} over {} does not map onto its image flow for flow", ToString(use.algorithm),
                           ToString(use.collective), Brief(members));
      }
    }
  }
  return {};
}

// A candidate: permutations that generate a group of `order` elements.
struct Candidate {
  std::vector<DevicePermutation> generators;
  int64_t order = 1;
  std::string label;
};

}  // namespace

bool StepShape::InsideLane(const std::vector<int64_t>& members) const {
  const int64_t lane = lane_of_rank[members.front()];
  if (lane_size[lane] <= 1) return false;
  return std::all_of(members.begin(), members.end(), [&](int64_t r) { return lane_of_rank[r] == lane; });
}

StepSymmetry NoSymmetry(int64_t devices, std::string why) {
  StepSymmetry s;
  s.representative.resize(devices);
  std::iota(s.representative.begin(), s.representative.end(), 0);
  s.description = std::move(why);
  return s;
}

StepSymmetry FindStepSymmetry(const StepShape& step, const ClusterPlatform& platform) {
  const Plan& plan = *step.plan;
  const int64_t n = plan.devices, dps = step.devices_per_server;
  if (plan.devices_per_stage % dps != 0)
    return NoSymmetry(n, fmt::format("every device simulated: a stage's {} devices do not fill servers of {}",
                                     plan.devices_per_stage, dps));
  std::vector<Candidate> slots, servers;
  for (int64_t b : Divisors(dps)) {
    if (b == 1) continue;
    Candidate c{{SlotPermutation(n, dps, [b](int64_t s) { return s / b * b + (s % b + 1) % b; })},
                dps,
                b == dps ? fmt::format("the {} slots of a server rotate", dps)
                         : fmt::format("slots rotate in blocks of {} and the blocks rotate", b)};
    if (b < dps) c.generators.push_back(SlotPermutation(n, dps, [b, dps](int64_t s) { return (s + b) % dps; }));
    slots.insert(slots.begin(), std::move(c));  // whole-server rotation first
  }
  for (int64_t b : Divisors(dps))
    if (b > 1 && b < dps)
      slots.push_back({{SlotPermutation(n, dps, [b, dps](int64_t s) { return (s + b) % dps; })},
                       dps / b,
                       fmt::format("blocks of {} slots of a server rotate", b)});
  // A server holding blocks of several stages (tp-pp-dp with tensor-parallel
  // groups smaller than a server) keeps them in place: the largest blocks first.
  const std::vector<int64_t> blocks = Divisors(dps);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
    if (const int64_t b = *it; b > 1 && b < dps)
      slots.push_back({{SlotPermutation(n, dps, [b](int64_t s) { return s / b * b + (s % b + 1) % b; })},
                       b,
                       fmt::format("slots rotate inside blocks of {}", b)});
  if (plan.placement.block % dps == 0) {
    const int64_t per_stage = plan.devices_per_stage / dps;
    for (int64_t t : Divisors(per_stage))
      if (t < per_stage)
        servers.push_back({{ServerRotation(plan, dps, t)},
                           per_stage / t,
                           t == 1 ? fmt::format("the {} servers of a stage rotate", per_stage)
                                  : fmt::format("a stage's {} servers rotate by {}", per_stage, t)});
  } else {
    // Every server holds devices of several stages: the servers rotate together.
    const int64_t servers_in_all = n / dps;
    for (int64_t t : Divisors(servers_in_all))
      if (t < servers_in_all) {
        DevicePermutation g(n);
        for (int64_t r = 0; r < n; ++r) g[r] = (r + t * dps) % n;
        servers.push_back({{std::move(g)},
                           servers_in_all / t,
                           t == 1 ? fmt::format("the {} servers rotate", servers_in_all)
                                  : fmt::format("the {} servers rotate by {}", servers_in_all, t)});
      }
  }

  auto check = [&](const DevicePermutation& g) {
    std::string why = platform.CheckSymmetry(g);
    return why.empty() ? CheckPlan(step, g, platform) : why;
  };
  StepSymmetry symmetry;
  std::vector<std::string> folded, kept;
  auto choose = [&](const std::vector<Candidate>& candidates, const char* what) {
    std::string first_why;
    for (const Candidate& c : candidates) {
      std::string why;
      for (const DevicePermutation& g : c.generators)
        if (why = check(g); !why.empty()) break;
      if (why.empty()) {
        symmetry.generators.insert(symmetry.generators.end(), c.generators.begin(), c.generators.end());
        symmetry.order *= c.order;
        folded.push_back(first_why.empty() ? c.label : fmt::format("{} (not more: {})", c.label, first_why));
        return;
      }
      if (first_why.empty()) first_why = why;
    }
    if (!candidates.empty()) kept.push_back(fmt::format("{} not folded ({})", what, first_why));
  };
  choose(slots, "slots");
  choose(servers, "servers");
  if (symmetry.order == 1) return NoSymmetry(n, fmt::format("every device simulated: {}", fmt::join(kept, "; ")));

  // Orbits: every one must have `order` devices (the group acts freely).
  std::vector<int64_t> root(n);
  std::iota(root.begin(), root.end(), 0);
  auto find = [&root](int64_t x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  for (const DevicePermutation& g : symmetry.generators)
    for (int64_t r = 0; r < n; ++r) {
      const int64_t a = find(r), b = find(g[r]);
      if (a != b) root[std::max(a, b)] = std::min(a, b);
    }
  std::vector<int64_t> orbit_size(n, 0);
  symmetry.representative.resize(n);
  for (int64_t r = 0; r < n; ++r) ++orbit_size[symmetry.representative[r] = find(r)];
  for (int64_t r = 0; r < n; ++r)
    if (symmetry.representative[r] == r && orbit_size[r] != symmetry.order)
      return NoSymmetry(n, fmt::format("every device simulated: the orbit of rank {} has {} devices, not {}", r,
                                       orbit_size[r], symmetry.order));
  // A group run as flows from its representatives must hold the
  // representative of each of its members: its flows' orbits then each have
  // one flow from a representative inside the group.
  std::vector<char> in_group(n, 0);
  for (const StageProgram& stage : plan.stages)
    for (const GroupUse& use : GroupUses(stage))
      for (const auto& members : step.groups[stage.stage][use.group].members) {
        if (step.InsideLane(members)) continue;
        const bool has_representative =
            std::any_of(members.begin(), members.end(), [&](int64_t r) { return symmetry.IsRepresentative(r); });
        if (!has_representative) continue;
        for (int64_t r : members) in_group[r] = 1;
        for (int64_t r : members)
          if (!in_group[symmetry.representative[r]])
            return NoSymmetry(
                n, fmt::format("every device simulated: the group {} would lose rank {}'s flows", Brief(members), r));
        for (int64_t r : members) in_group[r] = 0;
      }
  symmetry.description = fmt::format("{} of {} devices simulated, {}-fold symmetry: {}", n / symmetry.order, n,
                                     symmetry.order, fmt::join(folded, "; "));
  if (!kept.empty()) symmetry.description += fmt::format("; {}", fmt::join(kept, "; "));
  return symmetry;
}

}  // namespace shardlab::sim
