// The strategy-search problem of one pipeline stage: every operator with its
// candidate strategies (their layouts and costs) and every data edge with the
// cost of redistributing the producer's output layout into the layout the
// consumer wants. Costs come from one of two models behind one interface:
// `mindspore` (MindSpore's per-operator and redistribution costs in bytes and
// its objective alpha*computation + beta*(forward + gamma*parameter
// communication), with its latency refinement and its tie-break toward data
// parallel) and `time` (seconds on the configured cluster: roofline compute
// and the collectives' closed forms on the cluster's links).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config/cluster_config.h"
#include "core/cost/collective_cost.h"
#include "core/graph/graph.h"
#include "core/ops/op_layout.h"
#include "core/plan/rank_placement.h"

namespace shardlab {

struct CostModelOptions {
  std::string model = "mindspore";  // mindspore | time
  double alpha = 1.0;               // computation weight
  double beta = 400.0;              // communication weight (MindSpore: 400 Ascend, 50 GPU)
  double gamma = 0.001;             // weight of parameter (gradient) communication
  double device_memory = 16.0 * (1 << 30);
  bool training = true;
};

struct SearchOptions {
  int64_t stage_devices = 1;
  bool fully_use_devices = true;
  bool enable_alltoall = false;
  CostModelOptions cost;
  const ClusterSpec* cluster = nullptr;  // the time model's links and rates
  RankPlacement placement;               // where a stage's devices sit (the run's rank order)
  // Approximation for large stages (MindSpore's dp_algo_enable_approxi in
  // spirit): an operator keeps at most this many candidates, the cheapest by
  // its own cost, preferring strategies that split fewer dimensions, plus the
  // data-parallel one. 0 keeps every candidate (exact).
  size_t max_candidates = 0;
};

struct StrategyCandidate {
  Strategy strategy;
  OpLayout layout;
  double cost = 0;    // the objective's operator part
  double memory = 0;  // bytes per device the operator keeps (parameters and outputs)
};

struct SearchNode {
  int op = -1;
  bool configured = false;  // a user `shard` strategy: the only candidate
  std::vector<StrategyCandidate> candidates;
};

// Producer node -> consumer node through one tensor; or, for a parameter
// shared by several operators, its first user -> another user, costing
// nothing when both lay it out alike and forbidding the pair otherwise
// (MindSpore's TmpIdentity edges).
struct SearchEdge {
  int from = -1, to = -1;  // node indices
  int tensor = -1;
  int output = 0,
      input = 0;  // position among the producer's outputs (shared: the first user's inputs) / the consumer's inputs
  bool shared_parameter = false;
};

// The cost of a forbidden pair of candidates.
inline constexpr double kForbidden = 1e30;

class StrategyGraph {
 public:
  // Builds the nodes (configured strategies kept, otherwise every valid
  // candidate) and edges of the graph's operators. Throws LayoutError when
  // an operator has no valid strategy.
  StrategyGraph(const Graph& graph, const SearchOptions& options);
  // The graph with one given layout per operator as the only candidate: to
  // evaluate a strategy the search did not come from (semi-auto, recursive).
  StrategyGraph(const Graph& graph, const SearchOptions& options, const std::vector<OpLayout>& fixed);

  const Graph& graph() const { return graph_; }
  const SearchOptions& options() const { return options_; }
  const std::vector<SearchNode>& nodes() const { return nodes_; }
  const std::vector<SearchEdge>& edges() const { return edges_; }

  // The objective's cost of redistributing along `edge` with the producer
  // at candidate `from` and the consumer at candidate `to` (cached by layout pair).
  double EdgeCost(const SearchEdge& edge, size_t from, size_t to) const;
  // Candidates that lay an edge's tensor out alike form a class: at the
  // producer's end (from = true) or the consumer's, the class of each
  // candidate; and the cost between two classes. Edge costs depend on
  // classes only, so searches can work on classes.
  const std::vector<int>& EdgeClasses(size_t edge, bool from) const;
  double ClassCost(size_t edge, int from_class, int to_class) const;
  // The objective's cost of redistributing tensor `tensor` from one layout to
  // another, with the bytes it moves between devices in `communication`.
  double PairCost(int tensor, const TensorLayout& from, const TensorLayout& to, double* communication) const;

  // Objective of a full choice (one candidate per node) and its memory: the
  // largest pipeline stage's sum.
  double TotalCost(const std::vector<size_t>& choice) const;
  double TotalMemory(const std::vector<size_t>& choice) const;

  // The layouts of a choice, one per operator.
  std::vector<OpLayout> Layouts(const std::vector<size_t>& choice) const;

 private:
  // Where a group of `size` devices `stride` apart in a stage sits on the cluster.
  GroupPlacement PlaceStageGroup(int64_t size, int64_t stride) const;
  double OperatorCost(const Operator& op, const OpLayout& layout) const;
  void AddEdges();
  void Prune(SearchNode& node, const Operator& op, const std::vector<TensorType>& inputs,
             const std::vector<TensorType>& outputs, const std::vector<int>& weights) const;
  struct RedistributionCost {
    double objective = 0;
    double communication = 0;
  };
  struct EndClasses {
    std::vector<int> of_candidate;
    std::vector<size_t> representative;  // a candidate of each class
    std::vector<std::string> key;        // of each class's layout
  };
  const TensorLayout& EndLayout(const SearchEdge& edge, bool from, size_t candidate) const;
  size_t IndexOf(const SearchEdge& edge) const;
  const RedistributionCost& Redistribute(size_t edge, int from_class, int to_class) const;
  const RedistributionCost& LayoutCost(const Tensor& tensor, const TensorLayout& out, const TensorLayout& in,
                                       const std::string& key) const;

  const Graph& graph_;
  SearchOptions options_;
  std::vector<SearchNode> nodes_;
  std::vector<SearchEdge> edges_;
  std::vector<EndClasses> from_classes_, to_classes_;  // per edge
  mutable std::map<std::string, RedistributionCost> redistribution_cache_;
};

// Operators with the same type, shapes, parameter inputs, attributes and
// configured strategy have the same candidates.
std::string OperatorSignature(const Graph& graph, const Operator& op);

// MindSpore's defaults for the cluster's device kind (beta 400 on NPUs, 50 on GPUs).
CostModelOptions DefaultCostModel(const ClusterSpec& cluster);

}  // namespace shardlab
