#include "core/graph/op_types.h"

namespace shardlab {

const std::vector<OpTypeInfo>& OpTypes() {
  static const std::vector<OpTypeInfo> types = {
      {"MatMul", 2, 2, "matmul"},
      {"BatchMatMul", 2, 2, "matmul"},
      {"Add", 2, 2, "elementwise"},
      {"Sub", 2, 2, "elementwise"},
      {"Mul", 2, 2, "elementwise"},
      {"RealDiv", 2, 2, "elementwise"},
      {"Maximum", 2, 2, "elementwise"},
      {"Minimum", 2, 2, "elementwise"},
      {"BiasAdd", 2, 2, "bias_add"},
      {"ReLU", 1, 1, "activation"},
      {"GeLU", 1, 1, "activation"},
      {"FastGeLU", 1, 1, "activation"},
      {"Tanh", 1, 1, "activation"},
      {"Sigmoid", 1, 1, "activation"},
      {"Cast", 1, 1, "activation"},
      {"Softmax", 1, 1, "softmax"},
      {"LogSoftmax", 1, 1, "softmax"},
      {"LayerNorm", 3, 3, "layer_norm"},
      {"Dropout", 1, 1, "dropout"},
      {"ReduceSum", 1, 1, "reduce"},
      {"ReduceMean", 1, 1, "reduce"},
      {"ReduceMax", 1, 1, "reduce"},
      {"ReduceMin", 1, 1, "reduce"},
      {"Gather", 2, 2, "gather"},
      {"Reshape", 1, 1, "reshape"},
      {"Flatten", 1, 1, "reshape"},
      {"Transpose", 1, 1, "transpose"},
      {"OneHot", 1, 1, "one_hot"},
      {"SoftmaxCrossEntropyWithLogits", 2, 2, "loss"},
      {"SigmoidCrossEntropyWithLogits", 2, 2, "loss"},
      {"Conv2D", 2, 2, "conv"},
      {"MaxPool", 1, 1, "pool"},
      {"AvgPool", 1, 1, "pool"},
      {"BatchNorm", 5, 5, "batch_norm"},
  };
  return types;
}

const OpTypeInfo* FindOpType(const std::string& name) {
  for (const auto& type : OpTypes())
    if (type.name == name) return &type;
  return nullptr;
}

std::vector<std::string> OpTypeNames() {
  std::vector<std::string> names;
  for (const auto& type : OpTypes()) names.push_back(type.name);
  return names;
}

}  // namespace shardlab
