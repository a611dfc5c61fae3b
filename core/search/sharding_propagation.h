// MindSpore's sharding_propagation: from the operators the user configured
// with `shard`, a breadth-first walk fixes every unvisited neighbour's
// strategy: the one that keeps the shared tensor's layout exactly (no
// redistribution; it may repeat computation, as Megatron's replicated
// LayerNorms do), else the candidate with zero communication against every
// fixed neighbour (the cheapest such by the cost model), else the one with
// the least redistribution. Operators no configured one reaches keep their
// cheapest candidate. Shared parameters keep one layout in all their users.
#pragma once

#include <cstddef>
#include <vector>

#include "core/search/strategy_graph.h"

namespace shardlab {

// One layout per operator. Throws LayoutError when nothing is configured.
std::vector<OpLayout> ShardingPropagation(const StrategyGraph& graph);

}  // namespace shardlab
