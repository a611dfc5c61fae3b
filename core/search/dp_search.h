// MindSpore's dynamic_programming search: the strategy graph is shrunk by
// operator, edge, merge, contract, triangle and (as a last resort) star
// eliminations, each folding a node's candidates into its neighbours' costs
// and remembering the best choice per neighbour choice; the last nodes are
// chosen directly and the log is replayed backwards to recover every
// operator's strategy. Exact for the objective except through star
// eliminations (none on chains, residual diamonds and trees).
#pragma once

#include <cstddef>
#include <vector>

#include "core/search/strategy_graph.h"

namespace shardlab {

// One candidate index per node of `graph`.
std::vector<size_t> DynamicProgrammingSearch(const StrategyGraph& graph);

// Every combination of candidates (for tests and tiny graphs); throws when
// there are more than `limit`.
std::vector<size_t> ExhaustiveSearch(const StrategyGraph& graph, size_t limit = 2000000);

}  // namespace shardlab
