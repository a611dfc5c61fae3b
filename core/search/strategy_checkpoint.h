// Strategy checkpoints (MindSpore's strategy_ckpt_save_file and
// strategy_ckpt_load_file): every operator's strategy and every parameter's
// layout, as JSON, or as MindSpore's protobuf ParallelStrategyMap when the
// path ends in .ckpt or .pb (strategies and stages; parameter layouts only in
// JSON).
#pragma once

#include <map>
#include <string>

#include "core/ops/sharded_graph.h"

namespace shardlab {

// Written atomically. JSON: {"operators": {name: {"type", "strategy",
// "device_matrix"}}, "parameters": {name: {"device_matrix", "tensor_map",
// "slice_shape"}}}.
void SaveStrategyCheckpoint(const std::string& path, const ShardedGraph& sharded);

// One operator's strategy in a loaded checkpoint, and where the file has it
// (JSON: /operators/<name>/strategy; protobuf: /parallel_strategy_item/<name>).
struct LoadedStrategy {
  Strategy strategy;
  SourceLocation source;
};

// Operator name -> strategy. A missing, unreadable or malformed file is a
// ConfigError naming the file.
std::map<std::string, LoadedStrategy> LoadStrategyCheckpoint(const std::string& path);

}  // namespace shardlab
