#include "core/report/rank_view.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/layout/device_matrix.h"

namespace shardlab {
namespace {

// "forward AllReduce x24" for each (pass, collective) the step runs in group `g`.
std::vector<std::string> CollectivesIn(const StageProgram& stage, int g, bool training) {
  std::map<std::string, int64_t> counts;
  std::vector<std::string> order;
  auto count = [&](const std::string& where, Collective c) {
    const std::string key = fmt::format("{} {}", where, OperatorName(c));
    if (counts[key]++ == 0) order.push_back(key);
  };
  for (const Task& t : stage.step_start)
    if (t.group == g) count("step-start", t.collective);
  for (const Task& t : stage.forward)
    if (t.kind == Task::Kind::kCollective && t.group == g) count("forward", t.collective);
  if (training) {
    for (const Task& t : stage.backward)
      if (t.kind == Task::Kind::kCollective && t.group == g) count("backward", t.collective);
    for (const Task& t : stage.weight_gradient)
      if (t.kind == Task::Kind::kCollective && t.group == g) count("weight gradient", t.collective);
    for (const GradientBucket& b : stage.buckets)
      if (b.group == g) count(b.every_micro_batch ? "gradient (every micro-batch)" : "gradient", b.collective);
  }
  std::vector<std::string> out;
  for (const std::string& key : order) out.push_back(fmt::format("{} x{}", key, counts[key]));
  return out;
}

// The part of `layout`'s tensor that `rank` holds (a stage's ranks in order
// fill the layout's device arrangement).
RankSlice SliceOf(const TensorLayout& layout, const std::vector<int64_t>& stage_ranks, int64_t rank) {
  RankSlice s;
  s.shape = layout.tensor_shape();
  s.slice = layout.SliceShape();
  s.offset.assign(s.shape.size(), 0);
  const DeviceMatrix matrix(layout.device_arrangement(), stage_ranks);
  const std::vector<int64_t> coordinates = matrix.Coordinates(rank);
  for (size_t d = 0; d < s.shape.size(); ++d) {
    const int dim = layout.SplitDim(d);
    if (dim >= 0) s.offset[d] = coordinates[dim] * s.slice[d];
  }
  return s;
}

}  // namespace

RankView ViewRank(const RunSpec& run, const ShardedGraph& sharded, const Plan& plan, int64_t rank) {
  if (rank < 0 || rank >= plan.devices)
    throw std::invalid_argument(fmt::format("rank {} is not one of the run's {} devices", rank, plan.devices));
  RankView view;
  view.rank = rank;
  view.stage = plan.placement.StageOf(rank);
  view.server = rank / run.cluster.devices_per_server;
  view.server_slot = rank % run.cluster.devices_per_server;
  const StageProgram& stage = plan.stages[view.stage];
  const std::vector<int64_t> ranks = plan.StageRanks(view.stage);
  for (size_t g = 0; g < stage.groups.size(); ++g) {
    const CommGroupSpec& spec = stage.groups[g];
    if (spec.size <= 1) continue;
    RankGroup group;
    group.ranks = DeviceMatrix(spec.device_matrix, ranks).GroupAlongDims(rank, spec.dims);
    std::sort(group.ranks.begin(), group.ranks.end());
    group.collectives = CollectivesIn(stage, static_cast<int>(g), plan.training);
    view.groups.push_back(std::move(group));
  }
  const Graph& graph = sharded.graph;
  for (int t : graph.Parameters()) {
    const auto& users = graph.Consumers(t);
    if (users.empty() || graph.op(users.front()).pipeline_stage != view.stage) continue;
    const Operator& user = graph.op(users.front());
    const size_t input = std::find(user.inputs.begin(), user.inputs.end(), t) - user.inputs.begin();
    RankSlice slice = SliceOf(sharded.layouts[users.front()].inputs[input], ranks, rank);
    slice.parameter = graph.tensor(t).name;
    view.slices.push_back(std::move(slice));
  }
  return view;
}

nlohmann::json ToJson(const RankView& view) {
  nlohmann::json groups = nlohmann::json::array(), slices = nlohmann::json::array();
  for (const RankGroup& g : view.groups) groups.push_back({{"ranks", g.ranks}, {"collectives", g.collectives}});
  for (const RankSlice& s : view.slices)
    slices.push_back({{"parameter", s.parameter}, {"shape", s.shape}, {"slice", s.slice}, {"offset", s.offset}});
  return {{"global_rank", view.rank}, {"stage", view.stage},   {"server", view.server},
          {"server_slot", view.server_slot}, {"groups", groups}, {"slices", slices}};
}

std::string FormatRankView(const RankView& view, size_t max_slices) {
  std::string out = fmt::format("  rank       global_rank {}: stage {}, server {} slot {}; {} communication groups\n",
                                view.rank, view.stage, view.server, view.server_slot, view.groups.size());
  auto list = [](const std::vector<int64_t>& ranks) {
    if (ranks.size() <= 8) return fmt::format("[{}]", fmt::join(ranks, ","));
    return fmt::format("[{},{},...,{}] ({} ranks)", ranks[0], ranks[1], ranks.back(), ranks.size());
  };
  for (const RankGroup& g : view.groups)
    out += fmt::format("    group    {}: {}\n", list(g.ranks), fmt::join(g.collectives, ", "));
  for (size_t i = 0; i < view.slices.size() && i < max_slices; ++i) {
    const RankSlice& s = view.slices[i];
    out += fmt::format("    slice    {} [{}] at [{}] of [{}]\n", s.parameter, fmt::join(s.slice, ","),
                       fmt::join(s.offset, ","), fmt::join(s.shape, ","));
  }
  if (view.slices.size() > max_slices)
    out += fmt::format("    slice    ... and {} more parameters (all in the JSON result's \"rank\")\n",
                       view.slices.size() - max_slices);
  return out;
}

}  // namespace shardlab
