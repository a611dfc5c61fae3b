#include "core/search/strategy_graph.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cost/collective_cost.h"
#include "core/layout/redistribution.h"
#include "core/ops/graph_layouts.h"
#include "core/plan/operator_cost.h"
#include "core/util/progress_report.h"

namespace shardlab {
namespace {

// MindSpore's RefineForPracticalCost constants (bytes).
constexpr double kCommThreshold = 2048, kCommConst = 3072, kCommBias = 1024;

double Refine(double communication) {
  if (communication <= 0) return 0;
  return communication <= kCommThreshold ? kCommConst : communication + kCommBias;
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

// Layouts that normalise alike (repeated or size-1 device dimensions aside) redistribute alike.
std::string LayoutKey(const TensorLayout& layout) {
  const TensorLayout l = layout.Normalized();
  return fmt::format("{}|{}|{}", fmt::join(l.device_arrangement(), ","), fmt::join(l.tensor_map(), ","),
                     fmt::join(l.tensor_shape(), ","));
}

std::string AttrText(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return fmt::format("[{}]", fmt::join(x, ","));
        else
          return fmt::format("{}", x);
      },
      v);
}

}  // namespace

std::string OperatorSignature(const Graph& graph, const Operator& op) {
  std::string key = op.type;
  for (int t : op.inputs)
    key += fmt::format("|{}{}", fmt::join(graph.tensor(t).shape, "x"), graph.tensor(t).is_parameter() ? "p" : "");
  for (int t : op.outputs) key += fmt::format(">{}", fmt::join(graph.tensor(t).shape, "x"));
  for (const auto& [name, value] : op.attrs) key += ";" + name + "=" + AttrText(value);
  if (op.strategy) key += fmt::format(";strategy={}", *op.strategy);
  return key;
}

CostModelOptions DefaultCostModel(const ClusterSpec& cluster) {
  CostModelOptions c;
  c.beta = cluster.device.kind == "gpu" ? 50.0 : 400.0;
  return c;
}

StrategyGraph::StrategyGraph(const Graph& graph, const SearchOptions& options) : graph_(graph), options_(options) {
  // Operators alike (the repeated layers of a model) share their candidates.
  std::map<std::string, size_t> first_alike;
  const double ops = static_cast<double>(graph.operators().size());
  for (size_t i = 0; i < graph.operators().size(); ++i) {
    ReportProgress(static_cast<double>(i), 2 * ops);  // candidates, then edges
    const Operator& op = graph.op(static_cast<int>(i));
    auto [alike, is_new] = first_alike.emplace(OperatorSignature(graph, op), nodes_.size());
    if (!is_new) {
      SearchNode node = nodes_[alike->second];
      node.op = static_cast<int>(i);
      nodes_.push_back(std::move(node));
      continue;
    }
    const auto inputs = TensorTypes(graph, op.inputs);
    const auto outputs = TensorTypes(graph, op.outputs);
    const std::vector<int> weights = ParameterInputs(graph, op);
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
        if (node.configured) FailConfiguredStrategy(op, e.what());
        continue;
      }
      c.cost = OperatorCost(op, c.layout);
      for (int w : weights) c.memory += SliceBytes(c.layout.inputs[w], inputs[w].dtype);
      for (size_t o = 0; o < outputs.size(); ++o) c.memory += SliceBytes(c.layout.outputs[o], outputs[o].dtype);
      node.candidates.push_back(std::move(c));
    }
    if (options.max_candidates > 0 && node.candidates.size() > options.max_candidates)
      Prune(node, op, inputs, outputs, weights);
    if (node.candidates.empty())
      throw LayoutError(fmt::format("operator \"{}\" ({}) has no valid strategy on {} devices{}", op.name, op.type,
                                    options.stage_devices,
                                    options.fully_use_devices ? "; try fully_use_devices false" : ""));
    nodes_.push_back(std::move(node));
  }
  AddEdges();
}

StrategyGraph::StrategyGraph(const Graph& graph, const SearchOptions& options, const std::vector<OpLayout>& fixed)
    : graph_(graph), options_(options) {
  for (size_t i = 0; i < graph.operators().size(); ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    SearchNode node;
    node.op = static_cast<int>(i);
    node.configured = true;
    StrategyCandidate c;
    c.strategy = fixed[i].strategy;
    c.layout = fixed[i];
    c.cost = OperatorCost(op, c.layout);
    for (size_t k = 0; k < op.inputs.size(); ++k)
      if (graph.tensor(op.inputs[k]).is_parameter())
        c.memory += SliceBytes(c.layout.inputs[k], graph.tensor(op.inputs[k]).dtype);
    for (size_t o = 0; o < op.outputs.size(); ++o)
      c.memory += SliceBytes(c.layout.outputs[o], graph.tensor(op.outputs[o]).dtype);
    node.candidates.push_back(std::move(c));
    nodes_.push_back(std::move(node));
  }
  AddEdges();
}

void StrategyGraph::AddEdges() {
  const Graph& graph = graph_;
  std::map<int, int> node_of_op;
  for (size_t n = 0; n < nodes_.size(); ++n) node_of_op[nodes_[n].op] = static_cast<int>(n);
  const double ops = static_cast<double>(graph.operators().size());
  for (const SearchNode& node : nodes_) {
    ReportProgress(ops + node.op, 2 * ops);
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
  for (const SearchEdge& edge : edges_)
    for (bool from : {true, false}) {
      EndClasses classes;
      std::map<std::string, int> id;
      const auto& candidates = nodes_[from ? edge.from : edge.to].candidates;
      for (size_t c = 0; c < candidates.size(); ++c) {
        std::string key = LayoutKey(EndLayout(edge, from, c));
        auto [it, inserted] = id.emplace(key, static_cast<int>(classes.key.size()));
        if (inserted) {
          classes.key.push_back(std::move(key));
          classes.representative.push_back(c);
        }
        classes.of_candidate.push_back(it->second);
      }
      (from ? from_classes_ : to_classes_).push_back(std::move(classes));
    }
}

void StrategyGraph::Prune(SearchNode& node, const Operator& op, const std::vector<TensorType>& inputs,
                          const std::vector<TensorType>& outputs, const std::vector<int>& weights) const {
  auto split_dims = [](const Strategy& s) {
    int n = 0;
    for (const auto& t : s)
      for (int64_t v : t) n += v > 1;
    return n;
  };
  const Strategy data_parallel = DataParallelStrategy(op, inputs, outputs, options_.stage_devices, weights);
  std::stable_sort(node.candidates.begin(), node.candidates.end(),
                   [&](const StrategyCandidate& a, const StrategyCandidate& b) {
                     const bool da = a.strategy == data_parallel, db = b.strategy == data_parallel;
                     if (da != db) return da;
                     if (a.cost != b.cost) return a.cost < b.cost;
                     return split_dims(a.strategy) < split_dims(b.strategy);
                   });
  node.candidates.resize(options_.max_candidates);
}

GroupPlacement StrategyGraph::PlaceStageGroup(int64_t size, int64_t stride) const {
  std::vector<int64_t> ranks(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) ranks[static_cast<size_t>(i)] = options_.placement.Rank(0, i * stride);
  return PlaceGroup(ranks, *options_.cluster);
}

double StrategyGraph::OperatorCost(const Operator& op, const OpLayout& layout) const {
  const CostModelOptions& m = options_.cost;
  if (m.model == "time") {
    const ClusterSpec& cluster = *options_.cluster;
    double seconds = OperatorComputeSeconds(graph_, op, layout, cluster, m.training);
    auto comm_seconds = [&](const OpComm& c) {
      const GroupPlacement p = PlaceStageGroup(c.group_size, GroupStride(layout.device_matrix, c.device_dims));
      const Collective type = c.type;
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

const TensorLayout& StrategyGraph::EndLayout(const SearchEdge& edge, bool from, size_t candidate) const {
  if (!from) return nodes_[edge.to].candidates[candidate].layout.inputs[edge.input];
  const OpLayout& l = nodes_[edge.from].candidates[candidate].layout;
  return edge.shared_parameter ? l.inputs[edge.output] : l.outputs[edge.output];
}

const std::vector<int>& StrategyGraph::EdgeClasses(size_t edge, bool from) const {
  return (from ? from_classes_ : to_classes_)[edge].of_candidate;
}

const StrategyGraph::RedistributionCost& StrategyGraph::Redistribute(size_t edge_index, int from_class,
                                                                     int to_class) const {
  const SearchEdge& edge = edges_[edge_index];
  const EndClasses& fc = from_classes_[edge_index];
  const EndClasses& tc = to_classes_[edge_index];
  if (edge.shared_parameter) {
    static const RedistributionCost kSame{0, 0}, kDifferent{kForbidden, kForbidden};
    return fc.key[from_class] == tc.key[to_class] ? kSame : kDifferent;
  }
  const Tensor& tensor = graph_.tensor(edge.tensor);
  const std::string key = fc.key[from_class] + ">" + tc.key[to_class] + ":" + std::to_string(DTypeBytes(tensor.dtype));
  return LayoutCost(tensor, EndLayout(edge, true, fc.representative[from_class]),
                    EndLayout(edge, false, tc.representative[to_class]), key);
}

double StrategyGraph::PairCost(int tensor_index, const TensorLayout& from, const TensorLayout& to,
                               double* communication) const {
  const Tensor& tensor = graph_.tensor(tensor_index);
  const std::string key = LayoutKey(from) + ">" + LayoutKey(to) + ":" + std::to_string(DTypeBytes(tensor.dtype));
  const RedistributionCost& cost = LayoutCost(tensor, from, to, key);
  if (communication) *communication = cost.communication;
  return cost.objective;
}

const StrategyGraph::RedistributionCost& StrategyGraph::LayoutCost(const Tensor& tensor, const TensorLayout& out,
                                                                   const TensorLayout& in,
                                                                   const std::string& key) const {
  if (auto it = redistribution_cache_.find(key); it != redistribution_cache_.end()) return it->second;
  RedistributionCost cost;
  const Redistribution r = PlanRedistribution(out, in, options_.enable_alltoall, DTypeBytes(tensor.dtype));
  cost.communication = r.comm_bytes_per_device;
  const CostModelOptions& m = options_.cost;
  if (m.model == "time") {
    const ClusterSpec& cluster = *options_.cluster;
    for (const RedistOp& op : r.ops) {
      if (!op.is_communication()) continue;
      const GroupPlacement p = PlaceStageGroup(op.count, GroupStride(op.arrangement, {op.device_dim}));
      const Collective type = op.collective();
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

double StrategyGraph::ClassCost(size_t edge, int from_class, int to_class) const {
  return Redistribute(edge, from_class, to_class).objective;
}

size_t StrategyGraph::IndexOf(const SearchEdge& edge) const { return static_cast<size_t>(&edge - edges_.data()); }

double StrategyGraph::EdgeCost(const SearchEdge& edge, size_t from, size_t to) const {
  const size_t e = IndexOf(edge);
  return Redistribute(e, from_classes_[e].of_candidate[from], to_classes_[e].of_candidate[to]).objective;
}

double StrategyGraph::TotalCost(const std::vector<size_t>& choice) const {
  double total = 0;
  for (size_t n = 0; n < nodes_.size(); ++n) total += nodes_[n].candidates[choice[n]].cost;
  for (const SearchEdge& e : edges_) total += EdgeCost(e, choice[e.from], choice[e.to]);
  return total;
}

double StrategyGraph::TotalMemory(const std::vector<size_t>& choice) const {
  std::map<int64_t, double> per_stage;
  for (size_t n = 0; n < nodes_.size(); ++n)
    per_stage[graph_.op(nodes_[n].op).pipeline_stage] += nodes_[n].candidates[choice[n]].memory;
  double peak = 0;
  for (const auto& [stage, bytes] : per_stage) peak = std::max(peak, bytes);
  return peak;
}

std::vector<OpLayout> StrategyGraph::Layouts(const std::vector<size_t>& choice) const {
  std::vector<OpLayout> layouts(graph_.operators().size());
  for (size_t n = 0; n < nodes_.size(); ++n) layouts[nodes_[n].op] = nodes_[n].candidates[choice[n]].layout;
  return layouts;
}

}  // namespace shardlab
