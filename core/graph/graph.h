// The operator graph a model is made of: tensors (inputs, parameters,
// activations), operators in topological order with their attributes and
// optional user `shard` strategy, recompute flag and pipeline stage.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "core/graph/dtype.h"
#include "core/util/config_error.h"

namespace shardlab {

using Shape = std::vector<int64_t>;
// One tuple per operator input: the number of slices of each dimension.
using Strategy = std::vector<std::vector<int64_t>>;
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;
using Attrs = std::map<std::string, AttrValue>;

// A graph that breaks its own rules (a name used twice, a tensor used before
// it is produced, an unknown operator type).
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class TensorKind { kInput, kParameter, kActivation };
const char* ToString(TensorKind kind);

int64_t ElementCount(const Shape& shape);

struct Tensor {
  std::string name;
  Shape shape;
  DType dtype = DType::kFloat32;
  TensorKind kind = TensorKind::kActivation;
  int producer = -1;  // index of the producing operator, for activations
  // Parameters only (MindSpore's Parameter attributes).
  bool requires_grad = true;
  bool layerwise_parallel = false;  // hybrid_parallel: left out of gradient aggregation
  int64_t comm_fusion = 1;          // fusion id of its gradient communication (0: never fused)
  bool parallel_optimizer = true;   // may be sharded by the parallel optimizer

  int64_t elements() const { return ElementCount(shape); }
  int64_t bytes() const { return elements() * DTypeBytes(dtype); }
  bool is_parameter() const { return kind == TensorKind::kParameter; }
};

struct Operator {
  std::string name;
  std::string type;
  std::vector<int> inputs;   // tensor indices
  std::vector<int> outputs;  // tensor indices
  Attrs attrs;
  std::optional<Strategy> strategy;  // set with `shard` by the user or a model builder
  // Where `strategy` was configured (a model file's `shard`, a checkpoint
  // entry, the builder parameters), so that a strategy breaking a rule is a
  // ConfigError there; empty for strategies a search chose.
  SourceLocation strategy_source;
  bool recompute = false;
  // The activations it keeps for backward go to host memory during the
  // forward and come back before its backward (cpu_offloading_num_layers).
  bool offload_activations = false;
  int64_t pipeline_stage = 0;

  bool Has(const std::string& attr) const { return attrs.count(attr) != 0; }
  int64_t IntAttr(const std::string& attr, int64_t fallback) const;
  double NumberAttr(const std::string& attr, double fallback) const;
  bool BoolAttr(const std::string& attr, bool fallback) const;
  std::vector<int64_t> IntsAttr(const std::string& attr) const;
  std::string StringAttr(const std::string& attr, const std::string& fallback) const;
  // Placed on the host CPUs (primitive_target "CPU", Wide&Deep's host embedding).
  bool OnHost() const { return StringAttr("primitive_target", "") == "CPU"; }
  // Reshape and Flatten: a new shape over its input's memory, no data moved.
  bool IsView() const { return type == "Reshape" || type == "Flatten"; }
};

// Operators are kept in topological order: an operator may only use tensors
// that exist when it is added.
class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Operator>& operators() const { return operators_; }
  const Tensor& tensor(int index) const { return tensors_.at(index); }
  const Operator& op(int index) const { return operators_.at(index); }
  Operator& mutable_op(int index) { return operators_.at(index); }
  Tensor& mutable_tensor(int index) { return tensors_.at(index); }

  int AddInput(const std::string& name, Shape shape, DType dtype);
  int AddParameter(const std::string& name, Shape shape, DType dtype);
  // Adds an operator and creates its output tensors, with shapes and dtypes
  // from shape inference; returns the operator's index. Outputs are named
  // `output_names`, or after the operator ("name", then "name:1", ...).
  int AddOperator(Operator op, std::vector<std::string> output_names = {});

  std::optional<int> FindTensor(const std::string& name) const;
  std::optional<int> FindOperator(const std::string& name) const;
  // Operators that read a tensor, in graph order.
  const std::vector<int>& Consumers(int tensor) const { return consumers_.at(tensor); }
  std::vector<int> Parameters() const;
  int64_t stage_count() const;

 private:
  int AddTensor(Tensor tensor);

  std::string name_;
  std::vector<Tensor> tensors_;
  std::vector<Operator> operators_;
  std::vector<std::vector<int>> consumers_;  // per tensor
  std::unordered_map<std::string, int> tensor_index_;
  std::unordered_map<std::string, int> operator_index_;
};

}  // namespace shardlab
