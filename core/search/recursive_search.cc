#include "core/search/recursive_search.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shardlab {
namespace {

// `next` splits every dimension at least as much as `current`.
bool Refines(const Strategy& next, const Strategy& current) {
  if (next.size() != current.size()) return false;
  for (size_t i = 0; i < next.size(); ++i) {
    if (next[i].size() != current[i].size()) return false;
    for (size_t d = 0; d < next[i].size(); ++d)
      if (next[i][d] < current[i][d] || next[i][d] % current[i][d] != 0) return false;
  }
  return true;
}

// Split counts of a layout's tensor, per dimension.
std::vector<int64_t> Splits(const TensorLayout& layout) {
  std::vector<int64_t> split;
  const Shape slice = layout.SliceShape();
  for (size_t d = 0; d < slice.size(); ++d) split.push_back(layout.tensor_shape()[d] / slice[d]);
  return split;
}

// Whether a cut's split counts of a tensor can still grow into a decided
// neighbour's (splits only grow as halvings go on): every dimension's count
// divides the neighbour's. Operators decided at the same halving use as many
// devices, so for them this is equality; a configured neighbour is split in
// full from the first halving on, and a cut heading toward its split must not
// pay for differing from it yet.
bool CanGrowInto(const std::vector<int64_t>& cut, const std::vector<int64_t>& neighbour) {
  if (cut.size() != neighbour.size()) return false;
  for (size_t d = 0; d < cut.size(); ++d)
    if (neighbour[d] % cut[d] != 0) return false;
  return true;
}

double Bytes(const TensorLayout& layout, DType dtype) {
  return static_cast<double>(ElementCount(layout.SliceShape()) * DTypeBytes(dtype));
}

}  // namespace

std::vector<OpLayout> RecursiveProgrammingSearch(const Graph& graph, const SearchOptions& options) {
  const int64_t devices = options.stage_devices;
  int levels = 0;
  while ((int64_t{2} << levels) <= devices) ++levels;
  const size_t n = graph.operators().size();
  std::vector<Strategy> current(n);
  std::vector<OpLayout> layouts(n);
  std::vector<std::vector<int>> weights(n);
  std::vector<std::vector<TensorType>> inputs(n), outputs(n);
  for (size_t i = 0; i < n; ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    inputs[i] = TensorTypes(graph, op.inputs);
    outputs[i] = TensorTypes(graph, op.outputs);
    weights[i] = ParameterInputs(graph, op);
    // Unsplit, in the family's strategy shape (some families' tuples are not their inputs' ranks).
    current[i] = DataParallelStrategy(op, inputs[i], outputs[i], devices, weights[i]);
    for (auto& tuple : current[i]) std::fill(tuple.begin(), tuple.end(), 1);
    layouts[i] = InferOpLayout(op, inputs[i], outputs[i], current[i], devices, weights[i]);
  }
  // Weight: forward FLOPs of the whole operator. Neighbours: through data and shared parameters.
  std::vector<double> weight(n);
  for (size_t i = 0; i < n; ++i) weight[i] = ComputeOpWork(graph, graph.op(static_cast<int>(i))).forward_flops;
  std::vector<std::vector<size_t>> neighbours(n);
  for (size_t i = 0; i < n; ++i)
    for (int t : graph.op(static_cast<int>(i)).inputs) {
      const Tensor& tensor = graph.tensor(t);
      std::vector<int> others = graph.Consumers(t);
      if (tensor.producer >= 0) others.push_back(tensor.producer);
      for (int j : others)
        if (j != static_cast<int>(i) && (tensor.producer == j || tensor.is_parameter())) {
          neighbours[i].push_back(static_cast<size_t>(j));
          neighbours[j].push_back(i);
        }
    }

  std::map<std::string, std::vector<Strategy>> enumerated;  // signature and device count -> strategies
  const double gamma = options.cost.gamma;
  for (int level = 1; level <= levels; ++level) {
    const int64_t level_devices = int64_t{1} << level;
    std::vector<bool> decided(n, false);
    // Next: the heaviest operator next to one already decided at this
    // halving (so cuts agree along the graph), else the heaviest left.
    std::set<std::tuple<int, double, size_t>> queue;  // (not beside a decided one, -weight, operator)
    std::vector<bool> beside(n, false);
    for (size_t i = 0; i < n; ++i) queue.insert({1, -weight[i], i});
    auto decide = [&](size_t i) {
      decided[i] = true;
      for (size_t j : neighbours[i])
        if (!decided[j] && !beside[j]) {
          queue.erase({1, -weight[j], j});
          queue.insert({0, -weight[j], j});
          beside[j] = true;
        }
    };
    while (!queue.empty()) {
      const size_t i = std::get<2>(*queue.begin());
      queue.erase(queue.begin());
      const Operator& op = graph.op(static_cast<int>(i));
      if (op.strategy) {  // configured: applied whole at the first level
        if (level == 1) layouts[i] = InferOpLayout(op, inputs[i], outputs[i], *op.strategy, devices, weights[i]);
        current[i] = *op.strategy;
        decide(i);
        continue;
      }
      const std::string key = OperatorSignature(graph, op) + "@" + std::to_string(level_devices);
      auto it = enumerated.find(key);
      if (it == enumerated.end())
        it = enumerated.emplace(key, EnumerateStrategies(op, inputs[i], outputs[i], level_devices, true)).first;
      double best_cost = 0;
      bool found = false;
      Strategy best;
      OpLayout best_layout;
      const int64_t used = devices / layouts[i].repeat;
      for (const Strategy& s : it->second) {
        if (!Refines(s, current[i])) continue;
        OpLayout layout;
        try {
          layout = InferOpLayout(op, inputs[i], outputs[i], s, devices, weights[i]);
        } catch (const LayoutError&) {
          continue;
        }
        if (devices / layout.repeat != 2 * used) continue;  // one halving: twice the devices in use
        // A parameter shared with an operator decided at this halving keeps that operator's layout.
        bool consistent = true;
        for (size_t k = 0; k < op.inputs.size() && consistent; ++k) {
          if (!graph.tensor(op.inputs[k]).is_parameter()) continue;
          for (int other : graph.Consumers(op.inputs[k])) {
            if (other == static_cast<int>(i) || !decided[other]) continue;
            const Operator& o = graph.op(other);
            const size_t at = std::find(o.inputs.begin(), o.inputs.end(), op.inputs[k]) - o.inputs.begin();
            consistent = consistent && layouts[other].inputs[at].Normalized() == layout.inputs[k].Normalized();
          }
        }
        if (!consistent) continue;
        // The cut's own communication.
        double cost = 0;
        for (const OpComm& c : layout.forward_comm) cost += c.bytes;
        for (const OpComm& c : layout.backward_comm) cost += c.bytes;
        for (const OpComm& c : layout.mirror_comm) cost += gamma * c.bytes;
        // Penalty against decided neighbours that lay the shared tensor out differently.
        for (size_t k = 0; k < op.inputs.size(); ++k) {
          const Tensor& t = graph.tensor(op.inputs[k]);
          if (t.producer < 0 || !decided[t.producer]) continue;
          const Operator& producer = graph.op(t.producer);
          const size_t out =
              std::find(producer.outputs.begin(), producer.outputs.end(), op.inputs[k]) - producer.outputs.begin();
          if (!CanGrowInto(Splits(layout.inputs[k]), Splits(layouts[t.producer].outputs[out])))
            cost += Bytes(layout.inputs[k], t.dtype);
        }
        for (size_t o = 0; o < op.outputs.size(); ++o)
          for (int consumer : graph.Consumers(op.outputs[o])) {
            if (!decided[consumer]) continue;
            const Operator& c = graph.op(consumer);
            const size_t in = std::find(c.inputs.begin(), c.inputs.end(), op.outputs[o]) - c.inputs.begin();
            if (!CanGrowInto(Splits(layout.outputs[o]), Splits(layouts[consumer].inputs[in])))
              cost += Bytes(layout.outputs[o], graph.tensor(op.outputs[o]).dtype);
          }
        // Ties go to the earlier dimensions (batch first), as MindSpore's rec prefers N, then C, H, W.
        if (!found || cost < best_cost || (cost == best_cost && s > best)) {
          best_cost = cost;
          found = true;
          best = s;
          best_layout = std::move(layout);
        }
      }
      if (found) {
        current[i] = std::move(best);
        layouts[i] = std::move(best_layout);
      }
      decide(i);  // without a valid cut it stays as it is (repeated on the remaining devices)
    }
  }
  return layouts;
}

}  // namespace shardlab
