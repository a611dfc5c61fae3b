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

// Operator name -> strategy. A missing, unreadable or malformed file is an
// error naming the file.
std::map<std::string, Strategy> LoadStrategyCheckpoint(const std::string& path);

}  // namespace shardlab
