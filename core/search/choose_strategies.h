// Choosing every operator's strategy for a run, with MindSpore's rules: the
// one producer of the sharded graph, and the only code that reads
// parallel_mode, the operators' `shard` strategies, search_mode,
// fully_use_devices, the search cost model and strategy_ckpt_load_file, and
// writes strategy_ckpt_save_file.
//   stand_alone, data_parallel, hybrid_parallel: `shard` strategies and
//     strategy checkpoints are ignored (one warning); every operator takes
//     the data-parallel default.
//   semi_auto_parallel: configured strategies (a loaded checkpoint's take
//     precedence), the data-parallel default elsewhere.
//   auto_parallel: the search_mode searches; configured and loaded
//     strategies are kept as the only candidates of their operators.
#pragma once

#include <vector>

#include "core/config/run_config.h"
#include "core/ops/sharded_graph.h"

namespace shardlab {

ShardedGraph ChooseStrategies(const RunSpec& run, const Graph& graph);

// The graph with strategies a document fixes (one per operator, as a
// result.json records them), laid out without reading the run's strategy
// settings: how a simulation's strategies reach a viewer without a second
// search.
ShardedGraph ApplyGivenStrategies(const RunSpec& run, const Graph& graph, const std::vector<Strategy>& strategies);

}  // namespace shardlab
