// What a flex expert dispatch (DeepEP, HybridEP: Megatron's
// --moe-token-dispatcher-type flex) sends between servers. A token crosses
// once to each other server that holds any of its experts and is forwarded
// to them over the server's links there; the combine sums a server's expert
// outputs before they cross back. Against the AlltoAll dispatcher, which
// sends every (token, expert) copy, capacity slots included, across, this
// counts the servers a token reaches under uniform routing and, with
// group-limited routing (DeepSeek's n_group / topk_group), the fewer servers
// its groups allow.
#pragma once

#include <cstdint>

namespace shardlab {

struct ExpertRouting {
  int64_t experts = 1;            // routed experts, laid over the expert-parallel devices in order
  int64_t experts_per_token = 1;  // top-k
  int64_t groups = 1;             // router groups (1: none)
  int64_t group_topk = 1;         // groups a token's experts lie in
  double capacity_factor = 1;     // slots per balanced share in the AlltoAll's buffer
};

// The probability that a token has an expert on a given server, when the
// experts are spread evenly over `servers` servers in order and each token
// picks its experts uniformly (within group_topk groups chosen uniformly,
// each of them holding at least one of its experts).
double ServerHitProbability(const ExpertRouting& routing, int64_t servers);

// The flex dispatch's bytes across servers as a share of the AlltoAll's
// (whose buffer holds experts_per_token x capacity_factor slots per token):
// (servers - 1) x ServerHitProbability against experts_per_token x
// capacity_factor x (servers - 1) / servers. 1 on one server.
double FlexCrossingShare(const ExpertRouting& routing, int64_t servers);

// The SMs a flex dispatch's kernels hold while they run, in place of
// NCCL's channels: DeepEP's Buffer num_sms default, Megatron's
// moe_flex_dispatcher_num_sms; the 20 SMs of DeepSeek-V3's report, section 3.2.2.
constexpr int kFlexDispatchSms = 20;

}  // namespace shardlab
