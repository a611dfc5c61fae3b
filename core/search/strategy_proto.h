// MindSpore's protobuf strategy checkpoint, `mindspore.straspb.ParallelStrategyMap`
// (utils/node_strategy.proto, proto2), encoded and decoded by hand so that
// files move between MindSpore and shardlab without a protobuf dependency:
//   ParallelStrategyMap { required uint32 current_stage = 1;
//                         repeated ParallelStrategyItem parallel_strategy_item = 2; }
//   ParallelStrategyItem { required string node_name = 1; required ParallelStrategys parallel_strategys = 2; }
//   ParallelStrategys { required uint32 stage = 1; repeated ParallelStrategy parallel_strategy = 2; }
//   ParallelStrategy { repeated uint32 dim = 1; }
// Fields this file does not know (newer MindSpore's parameter layouts) are
// skipped when reading.
#pragma once

#include <map>
#include <string>

#include "core/graph/graph.h"

namespace shardlab {

struct ProtoStrategyMap {
  uint32_t current_stage = 1;
  std::map<std::string, std::pair<uint32_t, Strategy>> items;  // node name -> (pipeline stage, strategy)
};

std::string EncodeStrategyMap(const ProtoStrategyMap& map);
// Throws std::runtime_error naming the problem when `bytes` is not a valid message.
ProtoStrategyMap DecodeStrategyMap(const std::string& bytes);

}  // namespace shardlab
