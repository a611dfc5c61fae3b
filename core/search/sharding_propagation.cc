#include "core/search/sharding_propagation.h"

#include <deque>
#include <limits>

namespace shardlab {

std::vector<size_t> ShardingPropagation(const StrategyGraph& graph) {
  const auto& nodes = graph.nodes();
  const auto& edges = graph.edges();
  std::vector<std::vector<int>> incident(nodes.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    incident[edges[e].from].push_back(static_cast<int>(e));
    incident[edges[e].to].push_back(static_cast<int>(e));
  }
  std::vector<size_t> choice(nodes.size(), 0);
  std::vector<bool> visited(nodes.size(), false);
  std::deque<int> queue;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (nodes[n].configured) {
      visited[n] = true;
      queue.push_back(static_cast<int>(n));
    }
  if (queue.empty())
    throw LayoutError(
        "sharding_propagation needs at least one operator with a configured `shard` strategy to start from");
  while (!queue.empty()) {
    const int current = queue.front();
    queue.pop_front();
    for (int id : incident[current]) {
      const SearchEdge& e = edges[id];
      const int next = e.from == current ? e.to : e.from;
      if (visited[next]) continue;
      // Zero communication first (cheapest operator among those), else the least redistribution.
      size_t best = 0;
      bool best_free = false;
      double best_cost = std::numeric_limits<double>::infinity();
      for (size_t c = 0; c < nodes[next].candidates.size(); ++c) {
        // A shared parameter must match every visited user's layout.
        bool allowed = true;
        for (int other : incident[next]) {
          const SearchEdge& o = edges[other];
          const int peer = o.from == next ? o.to : o.from;
          if (!o.shared_parameter || !visited[peer]) continue;
          const double cost = o.from == next ? graph.EdgeCost(o, c, choice[peer]) : graph.EdgeCost(o, choice[peer], c);
          allowed = allowed && cost < kForbidden;
        }
        if (!allowed) continue;
        const size_t from = e.from == current ? choice[current] : c;
        const size_t to = e.from == current ? c : choice[current];
        const bool free = graph.EdgeCommunication(e, from, to) == 0;
        const double cost = free ? nodes[next].candidates[c].cost : graph.EdgeCost(e, from, to);
        if ((free && !best_free) || (free == best_free && cost < best_cost)) {
          best = c;
          best_free = free;
          best_cost = cost;
        }
      }
      choice[next] = best;
      visited[next] = true;
      queue.push_back(next);
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (visited[n]) continue;
    for (size_t c = 1; c < nodes[n].candidates.size(); ++c)
      if (nodes[n].candidates[c].cost < nodes[n].candidates[choice[n]].cost) choice[n] = c;
  }
  return choice;
}

}  // namespace shardlab
