// recursive_programming (MindSpore's double recursive algorithm): the device
// count is halved log2(D) times; at each halving every operator, heaviest
// first, doubles the split of one of its dimensions, choosing the cut whose
// communication (the collectives it inserts, gradient AllReduces weighted by
// gamma) plus a redistribution penalty against the neighbours already
// decided is least. Linear in the graph, so instant on huge graphs, and not
// limited to MindSpore's 1024 devices.
#pragma once

#include <vector>

#include "core/graph/graph.h"
#include "core/ops/op_layout.h"
#include "core/search/strategy_graph.h"

namespace shardlab {

// One layout per operator; configured strategies are kept.
std::vector<OpLayout> RecursiveProgrammingSearch(const Graph& graph, const SearchOptions& options);

}  // namespace shardlab
