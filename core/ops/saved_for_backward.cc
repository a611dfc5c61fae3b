#include "core/ops/saved_for_backward.h"

#include <string>

namespace shardlab {
namespace {

SavedTensors Inputs(std::vector<int> positions) { return {std::move(positions), {}, false}; }
SavedTensors Outputs(std::vector<int> positions) { return {{}, std::move(positions), false}; }

}  // namespace

SavedTensors SavedForBackward(const Operator& op) {
  const std::string& type = op.type;
  // Products need each operand for the other's gradient (dA = dY·Bᵀ, dB = Aᵀ·dY).
  if (type == "MatMul" || type == "BatchMatMul" || type == "Mul" || type == "RealDiv" || type == "Conv2D")
    return Inputs({0, 1});
  // The selected positions' masks, kept as the inputs.
  if (type == "Maximum" || type == "Minimum") return Inputs({0, 1});
  if (type == "ReduceMax" || type == "ReduceMin" || type == "MaxPool") return Inputs({0});
  // Derivatives written in terms of the input (GeLU, SiLU) or the output (ReLU's sign, tanh, sigmoid, softmax).
  if (type == "GeLU" || type == "FastGeLU" || type == "SiLU") return Inputs({0});
  if (type == "ReLU" || type == "Tanh" || type == "Sigmoid" || type == "Softmax" || type == "LogSoftmax")
    return Outputs({0});
  if (type == "Dropout") return {{}, {}, op.NumberAttr("keep_prob", 1.0) < 1.0};
  // Normalisations: the input (the per-row statistics are a negligible sliver).
  if (type == "LayerNorm" || type == "RmsNorm" || type == "BatchNorm") return Inputs({0});
  // FlashAttention's backward recomputes the scores from Q, K, V, its output
  // and the row log-sum-exp; no s x s tensor is kept.
  if (type == "FlashAttentionScore") return {{0, 1, 2}, {0}, false};
  // Routing: the token indices and routing weights that scatter the gradients back.
  if (type == "Gather" || type == "MoeDispatch") return Inputs({1});
  if (type == "MoeCombine") return Inputs({0, 1, 2});
  if (type == "TopK") return Outputs({0});
  // Losses keep their logits' softmax, the logits' size, and the labels.
  if (type == "SoftmaxCrossEntropyWithLogits" || type == "SigmoidCrossEntropyWithLogits" || type == "CrossEntropyLoss")
    return Inputs({0, 1});
  // Sums, bias adds, casts, rotary embeddings, views, copies, one-hot: the
  // gradient passes through without reading the forward's tensors.
  return {};
}

}  // namespace shardlab
