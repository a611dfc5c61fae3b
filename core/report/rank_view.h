// One device's view of a sharded, lowered run: what MindSpore compiles for
// the rank `global_rank` names. Its stage and place in the cluster, the
// communication groups it belongs to (with the collectives the step runs in
// each) and the slice of every parameter it holds. The plan is the same on
// every rank of a stage; the groups and slices are this rank's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/config/run_config.h"
#include "core/graph/graph.h"
#include "core/ops/sharded_graph.h"
#include "core/plan/plan.h"

namespace shardlab {

struct RankGroup {
  std::vector<int64_t> ranks;            // the group holding the rank, ascending
  std::vector<std::string> collectives;  // what runs in it per step: "forward AllReduce x24", ...
};

struct RankSlice {
  std::string parameter;
  Shape shape;    // the whole parameter
  Shape slice;    // what the rank holds
  Shape offset;   // where its slice starts
};

struct RankView {
  int64_t rank = 0;
  int64_t stage = 0;
  int64_t server = 0;        // rank / devices_per_server
  int64_t server_slot = 0;   // rank % devices_per_server
  std::vector<RankGroup> groups;  // in the plan's group order, those with more than one member
  std::vector<RankSlice> slices;  // every parameter of its stage, in graph order
};

// Throws std::invalid_argument when `rank` is not one of the plan's devices.
RankView ViewRank(const RunSpec& run, const ShardedGraph& sharded, const Plan& plan, int64_t rank);

nlohmann::json ToJson(const RankView& view);

// Console lines: the rank's place, its groups, and its first slices.
std::string FormatRankView(const RankView& view, size_t max_slices = 8);

}  // namespace shardlab
