// MindSpore's sharding_propagation: from each operator the user configured
// with `shard`, a breadth-first walk fixes every unvisited neighbour's
// strategy to the candidate that needs no redistribution on the edge between
// them (the cheapest such by the cost model), else the one with the least
// redistribution. Operators no configured one reaches keep their cheapest
// candidate. Shared parameters laid out differently by their users are an
// error, as in MindSpore.
#pragma once

#include <cstddef>
#include <vector>

#include "core/search/strategy_graph.h"

namespace shardlab {

// One candidate index per node. Throws LayoutError when nothing is configured.
std::vector<size_t> ShardingPropagation(const StrategyGraph& graph);

}  // namespace shardlab
