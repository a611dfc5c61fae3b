// Strategy search for a run: builds the strategy graph of the run's operator
// graph (configured `shard` strategies kept, strategies from a loaded
// strategy checkpoint applied first), runs the chosen mode and returns one
// layout per operator, ready for lowering. Strategy checkpoints (every
// operator's strategy and every parameter's layout) are read and written here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config/run_config.h"
#include "core/ops/op_layout.h"
#include "core/search/strategy_graph.h"

namespace shardlab {

struct SearchResult {
  std::string mode;        // dynamic_programming | recursive_programming | sharding_propagation | semi_auto
  std::string cost_model;  // mindspore | time
  std::vector<OpLayout> layouts;
  double objective = 0;  // the cost model's total for the chosen strategies
  double memory = 0;     // bytes per device the cost model counts
  double search_seconds = 0;
  size_t configured = 0;  // operators with a user or checkpoint strategy
};

// `mode` "" = the run's search_mode when parallel_mode is auto_parallel,
// else "semi_auto" (configured strategies, data parallel elsewhere).
// `cost_model` "" = mindspore.
SearchResult SearchStrategies(const RunSpec& run, Graph& graph, const std::string& mode, const std::string& cost_model);

// Strategy checkpoint, written atomically. JSON: {"operators": {name:
// {"type", "strategy", "device_matrix"}}, "parameters": {name:
// {"device_matrix", "tensor_map", "slice_shape"}}}. A path ending in .ckpt or
// .pb gets MindSpore's protobuf ParallelStrategyMap (strategies and stages;
// parameter layouts only in JSON).
void SaveStrategyCheckpoint(const std::string& path, const Graph& graph, const std::vector<OpLayout>& layouts);
// Operator name -> strategy.
std::map<std::string, Strategy> LoadStrategyCheckpoint(const std::string& path);

}  // namespace shardlab
