// The sharded graph: the stage of the data flow between the operator graph
// and the plan. It holds the graph with the strategy every operator runs
// (configured, loaded from a checkpoint or searched), the layout that
// strategy gives each operator, and how the strategies were chosen.
// `ChooseStrategies` (core/search/choose_strategies.h) is its one producer.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/graph/graph.h"
#include "core/ops/op_layout.h"

namespace shardlab {

// How the strategies of a sharded graph were chosen.
struct StrategyChoice {
  // data_parallel | stand_alone | hybrid_parallel | semi_auto |
  // dynamic_programming | recursive_programming | sharding_propagation | given
  std::string mode;
  std::string cost_model;  // mindspore | time; "" when nothing was searched
  // The run's search cost model's total for the chosen strategies, searched
  // or not (0 for strategies a document gives), so that modes compare.
  double objective = 0;
  double memory = 0;       // bytes per device the search cost model counts
  double search_seconds = 0;
  size_t configured = 0;            // operators whose strategy the user or a checkpoint fixed
  std::string loaded_checkpoint;    // strategy_ckpt_load_file, "" = none
  std::string saved_checkpoint;     // strategy_ckpt_save_file, "" = none

  bool Searched() const { return !cost_model.empty(); }
};

struct ShardedGraph {
  Graph graph;                    // every operator's `strategy` is the one it runs
  std::vector<OpLayout> layouts;  // one per operator, in graph order
  StrategyChoice choice;
  // data_parallel: every device runs the whole network on its own batch; the
  // layouts say which samples it holds, and no operator communicates or
  // redistributes (devices meet only in the gradient AllReduce).
  bool own_batch = false;

  // Every operator's strategy, in graph order.
  std::vector<Strategy> Strategies() const;
};

// {"mode", "cost_model", "objective", "memory_bytes", "configured_operators"}
// and the checkpoints; not the search time, so that a document is the same
// every time the same run is simulated.
nlohmann::json ToJson(const StrategyChoice& choice);

}  // namespace shardlab
