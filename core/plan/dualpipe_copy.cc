#include "core/plan/dualpipe_copy.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/op_types.h"

namespace shardlab {

ShardedGraph WithDualPipeCopy(const ShardedGraph& sharded, int64_t stages) {
  ShardedGraph out = sharded;
  Graph& graph = out.graph;
  const Graph& original = sharded.graph;
  auto mirrored = [](const std::string& name) { return "mirror." + name; };
  std::vector<int> copy_of(original.tensors().size(), -1);
  // An input or parameter is copied where the copy first uses it.
  auto copy_leaf = [&](int t) {
    const Tensor& tensor = original.tensor(t);
    const int copy = tensor.kind == TensorKind::kInput
                         ? graph.AddInput(mirrored(tensor.name), tensor.shape, tensor.dtype)
                         : graph.AddParameter(mirrored(tensor.name), tensor.shape, tensor.dtype);
    Tensor& c = graph.mutable_tensor(copy);
    c.requires_grad = tensor.requires_grad;
    c.layerwise_parallel = tensor.layerwise_parallel;
    c.comm_fusion = tensor.comm_fusion;
    c.parallel_optimizer = tensor.parallel_optimizer;
    return copy;
  };
  for (size_t i = 0; i < original.operators().size(); ++i) {
    const Operator& source = original.op(static_cast<int>(i));
    Operator op = source;
    op.name = mirrored(source.name);
    // Attributes a builder set after adding the operator (a MoE dispatch's
    // capacity_factor) go on after the copy is added, as they did.
    const OpTypeInfo* type = FindOpType(op.type);
    std::erase_if(op.attrs, [&](const auto& attr) {
      return attr.first != "primitive_target" && type &&
             std::find(type->attrs.begin(), type->attrs.end(), attr.first) == type->attrs.end();
    });
    op.pipeline_stage = stages - 1 - source.pipeline_stage;
    for (int& t : op.inputs) {
      if (copy_of[static_cast<size_t>(t)] < 0) copy_of[static_cast<size_t>(t)] = copy_leaf(t);
      t = copy_of[static_cast<size_t>(t)];
    }
    std::vector<std::string> names;
    for (int t : source.outputs) names.push_back(mirrored(original.tensor(t).name));
    const int index = graph.AddOperator(std::move(op), std::move(names));
    graph.mutable_op(index).attrs = source.attrs;
    for (size_t k = 0; k < source.outputs.size(); ++k)
      copy_of[static_cast<size_t>(source.outputs[k])] = graph.op(index).outputs[k];
    out.layouts.push_back(sharded.layouts[i]);
  }
  return out;
}

}  // namespace shardlab
