#include "core/graph/op_types.h"

namespace shardlab {

const std::vector<OpTypeInfo>& OpTypes() {
  static const std::vector<OpTypeInfo> types = {
      {"MatMul", 2, 2, "matmul", {"transpose_a", "transpose_b", "forward_reduce_scatter", "fp8_format"}},
      {"BatchMatMul", 2, 2, "matmul", {"transpose_a", "transpose_b", "forward_reduce_scatter", "fp8_format"}},
      {"Add", 2, 2, "elementwise", {}},
      {"Sub", 2, 2, "elementwise", {}},
      {"Mul", 2, 2, "elementwise", {}},
      {"RealDiv", 2, 2, "elementwise", {}},
      {"Maximum", 2, 2, "elementwise", {}},
      {"Minimum", 2, 2, "elementwise", {}},
      {"BiasAdd", 2, 2, "bias_add", {}},
      {"ReLU", 1, 1, "activation", {}},
      {"GeLU", 1, 1, "activation", {}},
      {"FastGeLU", 1, 1, "activation", {}},
      {"Tanh", 1, 1, "activation", {}},
      {"Sigmoid", 1, 1, "activation", {}},
      {"SiLU", 1, 1, "activation", {}},
      {"Cast", 1, 1, "activation", {"dtype"}},
      {"Softmax", 1, 1, "softmax", {"axis"}},
      {"LogSoftmax", 1, 1, "softmax", {"axis"}},
      {"LayerNorm", 3, 3, "layer_norm", {"begin_norm_axis", "begin_params_axis"}},
      {"RmsNorm", 2, 2, "layer_norm", {"epsilon"}},
      {"RotaryPositionEmbedding", 1, 1, "softmax", {}},
      {"FlashAttentionScore",
       3,
       3,
       "flash_attention",
       {"head_num", "input_layout", "sparse_mode", "keep_prob", "enable_ring_attention", "document_length"}},
      {"Dropout", 1, 1, "dropout", {"keep_prob"}},
      {"ReduceSum", 1, 1, "reduce", {"axis", "keep_dims"}},
      {"ReduceMean", 1, 1, "reduce", {"axis", "keep_dims"}},
      {"ReduceMax", 1, 1, "reduce", {"axis", "keep_dims"}},
      {"ReduceMin", 1, 1, "reduce", {"axis", "keep_dims"}},
      {"Gather", 2, 2, "gather", {"axis", "batch_local"}},
      {"Reshape", 1, 1, "reshape", {"shape"}},
      {"Flatten", 1, 1, "reshape", {}},
      {"Transpose", 1, 1, "transpose", {"perm", "context_exchange"}},
      {"SplitV", 1, 1, "softmax", {"size_splits", "split_dim"}},
      {"TopK", 1, 1, "softmax", {"k"}},
      {"Concat", 1, 8, "concat", {"axis"}},
      {"BroadcastTo", 1, 1, "broadcast", {"shape"}},
      {"MoeDispatch", 2, 2, "moe", {"expert_num", "capacity", "fp8_dispatch"}},
      {"MoeCombine", 3, 3, "moe", {}},
      {"OneHot", 1, 1, "one_hot", {"depth", "axis", "dtype"}},
      {"SoftmaxCrossEntropyWithLogits", 2, 2, "loss", {}},
      {"SigmoidCrossEntropyWithLogits", 2, 2, "loss", {}},
      {"CrossEntropyLoss", 2, 2, "loss", {}},
      {"Conv2D", 2, 2, "conv", {"stride", "pad", "group"}},
      {"MaxPool", 1, 1, "pool", {"kernel_size", "stride", "pad"}},
      {"AvgPool", 1, 1, "pool", {"kernel_size", "stride", "pad"}},
      {"BatchNorm", 5, 5, "batch_norm", {}},
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
