#include "core/search/choose_strategies.h"

#include <chrono>

#include <fmt/format.h>

#include "core/ops/graph_layouts.h"
#include "core/plan/rank_placement.h"
#include "core/search/dp_search.h"
#include "core/search/recursive_search.h"
#include "core/search/sharding_propagation.h"
#include "core/search/strategy_checkpoint.h"
#include "core/util/progress_report.h"
#include "core/util/warning.h"

namespace shardlab {
namespace {



// Modes in which MindSpore lays operators out itself: `shard` counts only in
// semi_auto_parallel and auto_parallel.
bool ReadsShardStrategies(ParallelMode mode) {
  return mode == ParallelMode::kSemiAutoParallel || mode == ParallelMode::kAutoParallel;
}

void IgnoreStrategies(const RunSpec& run, Graph& graph) {
  const ParallelConfig& p = run.parallel;
  size_t configured = 0;
  for (size_t i = 0; i < graph.operators().size(); ++i) {
    Operator& op = graph.mutable_op(static_cast<int>(i));
    configured += op.strategy.has_value();
    op.strategy.reset();
    op.strategy_source = {};
  }
  if (configured > 0)
    Warn(fmt::format("{}: parallel_mode {} ignores the shard strategies of {} operators (they count only in "
                     "semi_auto_parallel and auto_parallel)",
                     run.file.empty() ? run.name : run.file, ToString(p.parallel_mode), configured));
  for (const std::string* file : {&p.strategy_ckpt_load_file, &p.strategy_ckpt_save_file})
    if (!file->empty())
      Warn(fmt::format("{}: parallel_mode {} ignores the strategy checkpoint {}", run.file.empty() ? run.name : run.file,
                       ToString(p.parallel_mode), *file));
}

// data_parallel: MindSpore runs no parallel pass; every device runs the
// whole network on its own batch slice (a loss averages that slice, a
// masked-LM gather picks from it), and devices meet only in the gradient
// AllReduce. So the layouts keep their batch split but no operator
// communicates or redistributes.
void RunOnOwnBatch(ShardedGraph& sharded) {
  sharded.own_batch = true;
  for (OpLayout& layout : sharded.layouts) {
    layout.forward_comm.clear();
    layout.backward_comm.clear();
  }
}

// A loaded strategy replaces the configured one. Reshapes keep theirs only
// where the search may choose one (auto_parallel).
void ApplyCheckpoint(const std::string& path, ReshapeStrategy reshape, Graph& graph) {
  const auto loaded = LoadStrategyCheckpoint(path);
  for (size_t i = 0; i < graph.operators().size(); ++i) {
    Operator& op = graph.mutable_op(static_cast<int>(i));
    if (op.IsView() && reshape == ReshapeStrategy::kFollowsInput) continue;
    if (auto it = loaded.find(op.name); it != loaded.end()) {
      op.strategy = it->second.strategy;
      op.strategy_source = it->second.source;
    }
  }
}

SearchOptions SearchOptionsOf(const RunSpec& run) {
  const ParallelConfig& p = run.parallel;
  SearchOptions options;
  options.stage_devices = p.devices_per_stage();
  options.placement = PlacementOf(run);
  options.fully_use_devices = p.fully_use_devices;
  options.enable_alltoall = p.enable_alltoall;
  options.cost = DefaultCostModel(run.cluster);
  options.cost.model = p.cost_model.model;
  options.cost.training = run.simulation.training();
  options.cost.alpha = p.cost_model.alpha;
  if (p.cost_model.beta > 0) options.cost.beta = p.cost_model.beta;
  options.cost.gamma = p.cost_model.gamma;
  // MindSpore's device_memory_capacity defaults to 16 GiB; the cluster file knows the real one.
  options.cost.device_memory =
      p.cost_model.device_memory_capacity > 0 ? p.cost_model.device_memory_capacity : run.cluster.device.memory_bytes;
  options.cluster = &run.cluster;
  // Exact up to 64 devices per stage; larger stages keep 32 candidates per operator.
  if (options.stage_devices > 64) options.max_candidates = 32;
  return options;
}

// The search cost model's figures for layouts it did not choose itself. Done
// once the search is: its graph's build reports no progress of its own.
void Evaluate(const Graph& graph, const SearchOptions& options, const std::vector<OpLayout>& layouts,
              StrategyChoice* choice) {
  ScopedProgressRange done(1, 1);
  const StrategyGraph fixed(graph, options, layouts);
  const std::vector<size_t> only(fixed.nodes().size(), 0);
  choice->objective = fixed.TotalCost(only);
  choice->memory = fixed.TotalMemory(only);
}

std::vector<OpLayout> Search(const Graph& graph, const SearchOptions& options, StrategyChoice* choice) {
  std::vector<OpLayout> layouts;
  if (choice->mode == "recursive_programming") {
    layouts = RecursiveProgrammingSearch(graph, options);
    CheckSharedParameters(graph, layouts);
    Evaluate(graph, options, layouts, choice);
    return layouts;
  }
  // Building the graph (candidates, edges) is most of the work; the solve reports the rest.
  const StrategyGraph sg = [&] {
    ScopedProgressRange building(0, 0.8);
    return StrategyGraph(graph, options);
  }();
  {
    ScopedProgressRange solving(0.8, 1);
    layouts = choice->mode == "sharding_propagation" ? ShardingPropagation(sg) : sg.Layouts(DynamicProgrammingSearch(sg));
  }
  try {
    CheckSharedParameters(graph, layouts);
  } catch (const LayoutError& e) {
    throw LayoutError(
        fmt::format("{}: {}; configure consistent strategies for the operators sharing it", choice->mode, e.what()));
  }
  Evaluate(graph, options, layouts, choice);
  if (choice->memory > options.cost.device_memory)
    throw LayoutError(
        fmt::format("{}: no strategy fits in memory: the best needs {:.2f} GiB per device against {:.2f} GiB; try "
                    "fully_use_devices false, more pipeline stages or the parallel optimizer",
                    choice->mode, choice->memory / (1 << 30), options.cost.device_memory / (1 << 30)));
  return layouts;
}

}  // namespace

ShardedGraph ChooseStrategies(const RunSpec& run, const Graph& graph) {
  const auto start = std::chrono::steady_clock::now();
  const ParallelConfig& p = run.parallel;
  ShardedGraph out{graph, {}, {}};
  StrategyChoice& choice = out.choice;
  const SearchOptions options = SearchOptionsOf(run);
  if (!ReadsShardStrategies(p.parallel_mode)) {
    IgnoreStrategies(run, out.graph);
    choice.mode = ToString(p.parallel_mode);
    out.layouts = InferGraphLayouts(out.graph, options.stage_devices);
    if (p.parallel_mode == ParallelMode::kDataParallel) RunOnOwnBatch(out);
    Evaluate(out.graph, options, out.layouts, &choice);
  } else {
    const bool semi_auto = p.parallel_mode == ParallelMode::kSemiAutoParallel;
    if (!p.strategy_ckpt_load_file.empty()) {
      ApplyCheckpoint(p.strategy_ckpt_load_file,
                      semi_auto ? ReshapeStrategy::kFollowsInput : ReshapeStrategy::kAsGiven, out.graph);
      choice.loaded_checkpoint = p.strategy_ckpt_load_file;
    }
    for (const Operator& op : out.graph.operators()) choice.configured += op.strategy.has_value();
    if (semi_auto) {
      choice.mode = "semi_auto";
      out.layouts = InferGraphLayouts(out.graph, options.stage_devices);
      Evaluate(out.graph, options, out.layouts, &choice);
    } else {
      choice.mode = ToString(p.search_mode);
      choice.cost_model = options.cost.model;
      out.layouts = Search(out.graph, options, &choice);
    }
  }
  // The graph records what every operator runs.
  for (size_t i = 0; i < out.layouts.size(); ++i) out.graph.mutable_op(static_cast<int>(i)).strategy = out.layouts[i].strategy;
  if (ReadsShardStrategies(p.parallel_mode) && !p.strategy_ckpt_save_file.empty()) {
    SaveStrategyCheckpoint(p.strategy_ckpt_save_file, out);
    choice.saved_checkpoint = p.strategy_ckpt_save_file;
  }
  choice.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

ShardedGraph ApplyGivenStrategies(const RunSpec& run, const Graph& graph, const std::vector<Strategy>& strategies) {
  if (strategies.size() != graph.operators().size())
    throw LayoutError(fmt::format("{} strategies given for the {} operators of {}", strategies.size(),
                                  graph.operators().size(), run.name));
  ShardedGraph out{graph, {}, {}};
  for (size_t i = 0; i < strategies.size(); ++i) {
    Operator& op = out.graph.mutable_op(static_cast<int>(i));
    op.strategy = strategies[i];
    op.strategy_source = {};  // a result document's, checked when it was written
  }
  out.choice.mode = "given";
  out.layouts = InferGraphLayouts(out.graph, run.parallel.devices_per_stage(), ReshapeStrategy::kAsGiven);
  if (run.parallel.parallel_mode == ParallelMode::kDataParallel) RunOnOwnBatch(out);
  return out;
}

}  // namespace shardlab
