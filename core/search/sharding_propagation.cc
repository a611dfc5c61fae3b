#include "core/search/sharding_propagation.h"

#include <deque>
#include <limits>
#include <optional>

namespace shardlab {
namespace {

// The layout of an edge's tensor at one end.
const TensorLayout& EndLayout(const SearchEdge& e, bool from, const OpLayout& layout) {
  if (!from) return layout.inputs[e.input];
  return e.shared_parameter ? layout.inputs[e.output] : layout.outputs[e.output];
}

bool LaysOut(const Operator& op, const OpLayout& result, int tensor, const TensorLayout& layout) {
  for (size_t k = 0; k < op.inputs.size(); ++k)
    if (op.inputs[k] == tensor && result.inputs[k].Normalized() != layout.Normalized()) return false;
  for (size_t o = 0; o < op.outputs.size(); ++o)
    if (op.outputs[o] == tensor && result.outputs[o].Normalized() != layout.Normalized()) return false;
  return true;
}

// The strategy of `op` that lays `tensor` out as `layout` does: each input
// takes the tensor's split on the dimensions it shares with it, aligned from
// the right (as broadcasting aligns them) or else from the left (as Gather's
// indices lead its output), 1 elsewhere; a Reshape searches its own
// strategies. Empty when no such strategy passes the operator's rules.
std::optional<OpLayout> Follow(const Graph& graph, int op_index, int tensor, const TensorLayout& layout,
                               const SearchOptions& options) {
  const Operator& op = graph.op(op_index);
  const auto inputs = TensorTypes(graph, op.inputs);
  const auto outputs = TensorTypes(graph, op.outputs);
  const auto weights = ParameterInputs(graph, op);
  auto attempt = [&](const Strategy& strategy) -> std::optional<OpLayout> {
    try {
      OpLayout result = InferOpLayout(op, inputs, outputs, strategy, options.stage_devices, weights);
      if (LaysOut(op, result, tensor, layout)) return result;
    } catch (const LayoutError&) {
    }
    return std::nullopt;
  };
  if (op.IsView()) {
    for (const Strategy& s : EnumerateStrategies(op, inputs, outputs, options.stage_devices, false))
      if (auto r = attempt(s)) return r;
    return std::nullopt;
  }
  const Shape& shape = graph.tensor(tensor).shape;
  std::vector<int64_t> split;
  const Shape slice = layout.SliceShape();
  for (size_t d = 0; d < slice.size(); ++d) split.push_back(layout.tensor_shape()[d] / slice[d]);
  for (bool from_right : {true, false}) {
    Strategy strategy;
    for (const TensorType& in : inputs) {
      std::vector<int64_t> tuple(in.shape.size(), 1);
      for (size_t i = 0; i < in.shape.size() && i < shape.size(); ++i) {
        const size_t a = from_right ? in.shape.size() - 1 - i : i;
        const size_t b = from_right ? shape.size() - 1 - i : i;
        if (in.shape[a] == shape[b]) tuple[a] = split[b];
      }
      strategy.push_back(tuple);
    }
    if (auto r = attempt(strategy)) return r;
  }
  return std::nullopt;
}

}  // namespace

std::vector<OpLayout> ShardingPropagation(const StrategyGraph& graph) {
  const auto& nodes = graph.nodes();
  const auto& edges = graph.edges();
  std::vector<std::vector<int>> incident(nodes.size());
  for (size_t e = 0; e < edges.size(); ++e) {
    incident[edges[e].from].push_back(static_cast<int>(e));
    incident[edges[e].to].push_back(static_cast<int>(e));
  }
  std::vector<OpLayout> layout(nodes.size());
  std::vector<bool> visited(nodes.size(), false);
  std::deque<int> queue;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (nodes[n].configured) {
      layout[n] = nodes[n].candidates[0].layout;
      visited[n] = true;
      queue.push_back(static_cast<int>(n));
    }
  if (queue.empty())
    throw LayoutError(
        "sharding_propagation needs at least one operator with a configured `shard` strategy to start from");

  // Redistribution of `candidate` (for node `n`) against every visited neighbour.
  auto against_visited = [&](int n, const OpLayout& candidate, double* communication) {
    double cost = 0;
    *communication = 0;
    for (int id : incident[n]) {
      const SearchEdge& o = edges[id];
      const bool n_is_from = o.from == n;
      const int peer = n_is_from ? o.to : o.from;
      if (!visited[peer]) continue;
      const TensorLayout& mine = EndLayout(o, n_is_from, candidate);
      const TensorLayout& theirs = EndLayout(o, !n_is_from, layout[peer]);
      if (o.shared_parameter) {
        if (mine.Normalized() != theirs.Normalized()) return kForbidden;
        continue;
      }
      double moved = 0;
      cost +=
          n_is_from ? graph.PairCost(o.tensor, mine, theirs, &moved) : graph.PairCost(o.tensor, theirs, mine, &moved);
      *communication += moved;
    }
    return cost;
  };

  while (!queue.empty()) {
    const int current = queue.front();
    queue.pop_front();
    for (int id : incident[current]) {
      const SearchEdge& e = edges[id];
      const int next = e.from == current ? e.to : e.from;
      if (visited[next]) continue;
      // 1. The strategy that keeps the tensor exactly as `current` lays it
      //    out (no redistribution at all), if it also costs no communication
      //    against the other fixed neighbours.
      const TensorLayout& shared = EndLayout(e, e.from == current, layout[current]);
      std::optional<OpLayout> chosen = Follow(graph.graph(), nodes[next].op, e.tensor, shared, graph.options());
      double communication = 0;
      if (chosen && (against_visited(next, *chosen, &communication) >= kForbidden || communication > 0)) chosen.reset();
      // 2. Else the candidate with zero communication (the cheapest operator
      //    among those), else the least redistribution.
      if (!chosen) {
        bool best_free = false;
        double best_cost = std::numeric_limits<double>::infinity();
        for (const StrategyCandidate& c : nodes[next].candidates) {
          const double redistribution = against_visited(next, c.layout, &communication);
          if (redistribution >= kForbidden) continue;
          const bool free = communication == 0;
          const double cost = free ? c.cost : redistribution + c.cost;
          if (!chosen || (free && !best_free) || (free == best_free && cost < best_cost)) {
            chosen = c.layout;
            best_free = free;
            best_cost = cost;
          }
        }
      }
      if (!chosen) chosen = nodes[next].candidates[0].layout;
      layout[next] = std::move(*chosen);
      visited[next] = true;
      queue.push_back(next);
    }
  }
  // Operators no configured one reaches: their cheapest candidate.
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (visited[n]) continue;
    size_t best = 0;
    for (size_t c = 1; c < nodes[n].candidates.size(); ++c)
      if (nodes[n].candidates[c].cost < nodes[n].candidates[best].cost) best = c;
    layout[n] = nodes[n].candidates[best].layout;
  }
  std::vector<OpLayout> by_operator(graph.graph().operators().size());
  for (size_t n = 0; n < nodes.size(); ++n) by_operator[nodes[n].op] = std::move(layout[n]);
  return by_operator;
}

}  // namespace shardlab
