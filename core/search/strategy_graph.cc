#include "core/search/strategy_graph.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cost/collective_cost.h"
#include "core/cost/compute_cost.h"
#include "core/layout/redistribution.h"

namespace shardlab {
namespace {

// MindSpore's RefineForPracticalCost constants (bytes).
constexpr double kCommThreshold = 2048, kCommConst = 3072, kCommBias = 1024;

double Refine(double communication) {
  if (communication <= 0) return 0;
  return communication <= kCommThreshold ? kCommConst : communication + kCommBias;
}

std::vector<TensorType> Types(const Graph& graph, const std::vector<int>& tensors) {
  std::vector<TensorType> types;
  for (int t : tensors) types.push_back({graph.tensor(t).shape, graph.tensor(t).dtype});
  return types;
}

double SliceBytes(const TensorLayout& layout, DType dtype) {
  return static_cast<double>(ElementCount(layout.SliceShape()) * DTypeBytes(dtype));
}

// The stride between members of a group along `dims` of a row-major device
// matrix: that of its innermost dimension.
int64_t GroupStride(const Shape& matrix, const std::vector<int>& dims) {
  if (dims.empty()) return 1;
  const int inner = *std::max_element(dims.begin(), dims.end());
  int64_t stride = 1;
  for (size_t d = static_cast<size_t>(inner) + 1; d < matrix.size(); ++d) stride *= matrix[d];
  return stride;
}

Collective CollectiveOf(const std::string& type) {
  if (type == "AllGather") return Collective::kAllGather;
  if (type == "ReduceScatter") return Collective::kReduceScatter;
  if (type == "AlltoAll") return Collective::kAllToAll;
  return Collective::kAllReduce;
}

std::string LayoutKey(const TensorLayout& l) {
  return fmt::format("{}|{}|{}", fmt::join(l.device_arrangement(), ","), fmt::join(l.tensor_map(), ","),
                     fmt::join(l.tensor_shape(), ","));
}

}  // namespace

CostModelOptions DefaultCostModel(const ClusterSpec& cluster) {
  CostModelOptions c;
  c.beta = cluster.device.kind == "gpu" ? 50.0 : 400.0;
  return c;
}

StrategyGraph::StrategyGraph(const Graph& graph, const SearchOptions& options) : graph_(graph), options_(options) {
  std::map<int, int> node_of_op;
  for (size_t i = 0; i < graph.operators().size(); ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    const auto inputs = Types(graph, op.inputs);
    const auto outputs = Types(graph, op.outputs);
    std::vector<int> weights;
    for (size_t k = 0; k < op.inputs.size(); ++k)
      if (graph.tensor(op.inputs[k]).is_parameter()) weights.push_back(static_cast<int>(k));
    SearchNode node;
    node.op = static_cast<int>(i);
    node.configured = op.strategy.has_value();
    std::vector<Strategy> strategies;
    if (node.configured) {
      strategies.push_back(*op.strategy);
    } else {
      strategies = EnumerateStrategies(op, inputs, outputs, options.stage_devices, options.fully_use_devices);
      if (strategies.empty())
        strategies.push_back(DataParallelStrategy(op, inputs, outputs, options.stage_devices, weights));
    }
    for (const Strategy& s : strategies) {
      StrategyCandidate c;
      c.strategy = s;
      try {
        c.layout = InferOpLayout(op, inputs, outputs, s, options.stage_devices, weights);
      } catch (const LayoutError& e) {
        if (node.configured) throw LayoutError(fmt::format("operator \"{}\": {}", op.name, e.what()));
        continue;
      }
      c.cost = OperatorCost(c.layout, outputs.empty() ? DType::kFloat32 : outputs[0].dtype);
      for (int w : weights) c.memory += SliceBytes(c.layout.inputs[w], inputs[w].dtype);
      for (size_t o = 0; o < outputs.size(); ++o) c.memory += SliceBytes(c.layout.outputs[o], outputs[o].dtype);
      node.candidates.push_back(std::move(c));
    }
    if (node.candidates.empty())
      throw LayoutError(fmt::format("operator \"{}\" ({}) has no valid strategy on {} devices{}", op.name, op.type,
                                    options.stage_devices,
                                    options.fully_use_devices ? "; try fully_use_devices false" : ""));
    node_of_op[node.op] = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(node));
  }
  for (const SearchNode& node : nodes_) {
    const Operator& op = graph.op(node.op);
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const Tensor& t = graph.tensor(op.inputs[k]);
      if (t.producer < 0) continue;
      const Operator& producer = graph.op(t.producer);
      const int output = static_cast<int>(std::find(producer.outputs.begin(), producer.outputs.end(), op.inputs[k]) -
                                          producer.outputs.begin());
      edges_.push_back({node_of_op.at(t.producer), node_of_op.at(node.op), op.inputs[k], output, static_cast<int>(k)});
    }
  }
  // Shared parameters tie their users' layouts together.
  for (int param : graph.Parameters()) {
    const auto& users = graph.Consumers(param);
    for (size_t u = 1; u < users.size(); ++u) {
      const Operator& a = graph.op(users[0]);
      const Operator& b = graph.op(users[u]);
      const int ia = static_cast<int>(std::find(a.inputs.begin(), a.inputs.end(), param) - a.inputs.begin());
      const int ib = static_cast<int>(std::find(b.inputs.begin(), b.inputs.end(), param) - b.inputs.begin());
      edges_.push_back({node_of_op.at(users[0]), node_of_op.at(users[u]), param, ia, ib, true});
    }
  }
}

double StrategyGraph::OperatorCost(const OpLayout& layout, DType dtype) const {
  const CostModelOptions& m = options_.cost;
  if (m.model == "time") {
    const ClusterSpec& cluster = *options_.cluster;
    double seconds =
        ComputeSeconds(layout.work.forward_flops + (m.training ? layout.work.backward_flops : 0),
                       layout.work.forward_bytes + (m.training ? layout.work.backward_bytes : 0), dtype, cluster, false)
            .seconds;
    auto comm_seconds = [&](const OpComm& c) {
      const GroupPlacement p =
          PlaceStridedGroup(0, c.group_size, GroupStride(layout.device_matrix, c.device_dims), cluster);
      const Collective type = CollectiveOf(c.type);
      return CollectiveSeconds(type, ChooseAlgorithm(type, c.bytes, p, cluster), c.bytes, p, cluster);
    };
    for (const OpComm& c : layout.forward_comm) seconds += comm_seconds(c) * (m.training ? 2 : 1);
    if (m.training) {
      for (const OpComm& c : layout.backward_comm) seconds += comm_seconds(c);
      for (const OpComm& c : layout.mirror_comm) seconds += m.gamma * comm_seconds(c);
    }
    return seconds;
  }
  // MindSpore: computation = the input slices (plus the output when a forward
  // reduction follows), communication in bytes; data parallel wins ties.
  double computation = 0, forward = 0, backward = 0;
  for (const TensorLayout& in : layout.inputs) computation += static_cast<double>(ElementCount(in.SliceShape())) * 4;
  for (const OpComm& c : layout.forward_comm) forward += c.bytes;
  if (forward > 0)
    for (const TensorLayout& out : layout.outputs)
      computation += static_cast<double>(ElementCount(out.SliceShape())) * 4;
  for (const OpComm& c : layout.mirror_comm) backward += c.bytes;
  for (const OpComm& c : layout.backward_comm) backward += c.bytes;
  if (!layout.strategy.empty() && !layout.strategy[0].empty() && layout.strategy[0][0] == options_.stage_devices) {
    if (computation > 1) computation -= 1;
    if (forward > 1) forward -= 1;
  }
  forward = Refine(forward);
  return m.alpha * computation + m.beta * (forward + (m.training ? m.gamma * backward : 0));
}

const StrategyGraph::RedistributionCost& StrategyGraph::Redistribute(const SearchEdge& edge, size_t from,
                                                                     size_t to) const {
  if (edge.shared_parameter) {
    static const RedistributionCost kSame{0, 0}, kDifferent{kForbidden, kForbidden};
    const TensorLayout& a = nodes_[edge.from].candidates[from].layout.inputs[edge.output];
    const TensorLayout& b = nodes_[edge.to].candidates[to].layout.inputs[edge.input];
    return a.Normalized() == b.Normalized() ? kSame : kDifferent;
  }
  const Tensor& tensor = graph_.tensor(edge.tensor);
  const TensorLayout& out = nodes_[edge.from].candidates[from].layout.outputs[edge.output];
  const TensorLayout& in = nodes_[edge.to].candidates[to].layout.inputs[edge.input];
  const std::string key = LayoutKey(out) + ">" + LayoutKey(in) + ":" + std::to_string(DTypeBytes(tensor.dtype));
  if (auto it = redistribution_cache_.find(key); it != redistribution_cache_.end()) return it->second;
  RedistributionCost cost;
  const Redistribution r = PlanRedistribution(out, in, options_.enable_alltoall, DTypeBytes(tensor.dtype));
  cost.communication = r.comm_bytes_per_device;
  const CostModelOptions& m = options_.cost;
  if (m.model == "time") {
    const ClusterSpec& cluster = *options_.cluster;
    for (const RedistOp& op : r.ops) {
      if (!op.is_communication()) continue;
      const GroupPlacement p = PlaceStridedGroup(0, op.count, GroupStride(op.arrangement, {op.device_dim}), cluster);
      const Collective type = op.type == "AlltoAll" ? Collective::kAllToAll : Collective::kAllGather;
      const double bytes = static_cast<double>(ElementCount(op.input_shape) * DTypeBytes(tensor.dtype));
      const double seconds = CollectiveSeconds(type, ChooseAlgorithm(type, bytes, p, cluster), bytes, p, cluster);
      cost.objective += seconds * (m.training ? 2 : 1);  // and its gradient's way back
    }
  } else {
    const double forward = Refine(r.cost.forward_communication);
    const double backward = m.training ? Refine(r.cost.backward_communication) : 0;
    cost.objective = m.alpha * r.cost.computation + m.beta * (forward + backward);
  }
  return redistribution_cache_.emplace(key, cost).first->second;
}

double StrategyGraph::EdgeCost(const SearchEdge& edge, size_t from, size_t to) const {
  return Redistribute(edge, from, to).objective;
}

std::vector<std::vector<double>> StrategyGraph::EdgeCostMatrix(const SearchEdge& edge) const {
  // Candidates that lay the tensor out alike share a row (or column).
  auto classes = [](const std::vector<StrategyCandidate>& candidates, auto layout_of) {
    std::map<std::string, size_t> first;
    std::vector<size_t> representative(candidates.size());
    for (size_t c = 0; c < candidates.size(); ++c)
      representative[c] = first.emplace(LayoutKey(layout_of(candidates[c])), c).first->second;
    return representative;
  };
  const auto& from = nodes_[edge.from].candidates;
  const auto& to = nodes_[edge.to].candidates;
  const auto rows = classes(from, [&](const StrategyCandidate& c) -> const TensorLayout& {
    return edge.shared_parameter ? c.layout.inputs[edge.output] : c.layout.outputs[edge.output];
  });
  const auto cols =
      classes(to, [&](const StrategyCandidate& c) -> const TensorLayout& { return c.layout.inputs[edge.input]; });
  std::vector<std::vector<double>> m(from.size(), std::vector<double>(to.size()));
  for (size_t i = 0; i < from.size(); ++i)
    for (size_t j = 0; j < to.size(); ++j) m[i][j] = rows[i] == i && cols[j] == j ? EdgeCost(edge, i, j) : -1;
  for (size_t i = 0; i < from.size(); ++i)
    for (size_t j = 0; j < to.size(); ++j)
      if (m[i][j] < 0) m[i][j] = m[rows[i]][cols[j]];
  return m;
}

double StrategyGraph::EdgeCommunication(const SearchEdge& edge, size_t from, size_t to) const {
  return Redistribute(edge, from, to).communication;
}

double StrategyGraph::TotalCost(const std::vector<size_t>& choice) const {
  double total = 0;
  for (size_t n = 0; n < nodes_.size(); ++n) total += nodes_[n].candidates[choice[n]].cost;
  for (const SearchEdge& e : edges_) total += EdgeCost(e, choice[e.from], choice[e.to]);
  return total;
}

double StrategyGraph::TotalMemory(const std::vector<size_t>& choice) const {
  double total = 0;
  for (size_t n = 0; n < nodes_.size(); ++n) total += nodes_[n].candidates[choice[n]].memory;
  return total;
}

std::vector<OpLayout> StrategyGraph::Layouts(const std::vector<size_t>& choice) const {
  std::vector<OpLayout> layouts(graph_.operators().size());
  for (size_t n = 0; n < nodes_.size(); ++n) layouts[nodes_[n].op] = nodes_[n].candidates[choice[n]].layout;
  return layouts;
}

}  // namespace shardlab
