#include "core/ops/sharded_graph.h"

#include <nlohmann/json.hpp>

namespace shardlab {

std::vector<Strategy> ShardedGraph::Strategies() const {
  std::vector<Strategy> out;
  out.reserve(layouts.size());
  for (const OpLayout& l : layouts) out.push_back(l.strategy);
  return out;
}

nlohmann::json ToJson(const StrategyChoice& c) {
  nlohmann::json j = {{"mode", c.mode},
                      {"cost_model", c.cost_model},
                      {"objective", c.objective},
                      {"memory_bytes", c.memory},
                      {"configured_operators", c.configured}};
  if (!c.loaded_checkpoint.empty()) j["loaded_checkpoint"] = c.loaded_checkpoint;
  if (!c.saved_checkpoint.empty()) j["saved_checkpoint"] = c.saved_checkpoint;
  return j;
}

}  // namespace shardlab
