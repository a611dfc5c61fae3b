#include "core/graph/graph.h"

#include <algorithm>

#include "core/graph/shape_inference.h"

namespace shardlab {

const char* ToString(TensorKind kind) {
  switch (kind) {
    case TensorKind::kInput:
      return "input";
    case TensorKind::kParameter:
      return "parameter";
    case TensorKind::kActivation:
      return "activation";
  }
  return "";
}

int64_t ElementCount(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Operator::IntAttr(const std::string& attr, int64_t fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  throw GraphError("operator " + name + ": attribute " + attr + " is not an integer");
}

double Operator::NumberAttr(const std::string& attr, double fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  throw GraphError("operator " + name + ": attribute " + attr + " is not a number");
}

bool Operator::BoolAttr(const std::string& attr, bool fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<bool>(&it->second)) return *v;
  throw GraphError("operator " + name + ": attribute " + attr + " is not a bool");
}

std::vector<int64_t> Operator::IntsAttr(const std::string& attr) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return {};
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return {*v};
  throw GraphError("operator " + name + ": attribute " + attr + " is not a list of integers");
}

std::string Operator::StringAttr(const std::string& attr, const std::string& fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  throw GraphError("operator " + name + ": attribute " + attr + " is not a string");
}

int Graph::AddTensor(Tensor tensor) {
  if (tensor.name.empty()) throw GraphError("a tensor needs a name");
  if (tensor_index_.count(tensor.name)) throw GraphError("tensor name \"" + tensor.name + "\" is used twice");
  int64_t elements = 1;
  for (int64_t d : tensor.shape) {
    if (d < 1) throw GraphError("tensor \"" + tensor.name + "\" has a dimension < 1");
    // Element counts are products of dimensions everywhere; keep them far from overflow.
    if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 53))
      throw GraphError("tensor \"" + tensor.name + "\" has more than 2^53 elements");
  }
  const int index = static_cast<int>(tensors_.size());
  tensor_index_.emplace(tensor.name, index);
  tensors_.push_back(std::move(tensor));
  consumers_.emplace_back();
  return index;
}

int Graph::AddInput(const std::string& name, Shape shape, DType dtype) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.kind = TensorKind::kInput;
  t.requires_grad = false;
  return AddTensor(std::move(t));
}

int Graph::AddParameter(const std::string& name, Shape shape, DType dtype) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.kind = TensorKind::kParameter;
  return AddTensor(std::move(t));
}

int Graph::AddOperator(Operator op, std::vector<std::string> output_names) {
  if (op.name.empty()) throw GraphError("an operator needs a name");
  if (operator_index_.count(op.name)) throw GraphError("operator name \"" + op.name + "\" is used twice");
  // InferOutputs checks the type, the input count and the attributes.
  for (int input : op.inputs)
    if (input < 0 || input >= static_cast<int>(tensors_.size()))
      throw GraphError("operator \"" + op.name + "\" uses a tensor that does not exist yet");
  if (op.pipeline_stage < 0) throw GraphError("operator \"" + op.name + "\" has a negative pipeline stage");
  std::vector<TensorType> inputs;
  for (int input : op.inputs) inputs.push_back({tensors_[input].shape, tensors_[input].dtype});
  const std::vector<TensorType> outputs = InferOutputs(op, inputs);
  if (!output_names.empty() && output_names.size() != outputs.size())
    throw GraphError("operator \"" + op.name + "\" (" + op.type + ") has " + std::to_string(outputs.size()) +
                     " outputs, " + std::to_string(output_names.size()) + " names given");
  const int index = static_cast<int>(operators_.size());
  op.outputs.clear();
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor out;
    out.name = !output_names.empty() ? output_names[i] : i == 0 ? op.name : op.name + ":" + std::to_string(i);
    out.shape = outputs[i].shape;
    out.dtype = outputs[i].dtype;
    out.kind = TensorKind::kActivation;
    out.producer = index;
    out.requires_grad = false;
    op.outputs.push_back(AddTensor(std::move(out)));
  }
  operator_index_.emplace(op.name, index);
  for (int input : op.inputs)
    if (consumers_[input].empty() || consumers_[input].back() != index) consumers_[input].push_back(index);
  operators_.push_back(std::move(op));
  return index;
}

std::optional<int> Graph::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> Graph::FindOperator(const std::string& name) const {
  auto it = operator_index_.find(name);
  if (it == operator_index_.end()) return std::nullopt;
  return it->second;
}

std::vector<int> Graph::Parameters() const {
  std::vector<int> out;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].is_parameter()) out.push_back(static_cast<int>(i));
  return out;
}

int64_t Graph::stage_count() const {
  int64_t stages = 1;
  for (const auto& op : operators_) stages = std::max(stages, op.pipeline_stage + 1);
  return stages;
}

}  // namespace shardlab
