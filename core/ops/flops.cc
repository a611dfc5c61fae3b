#include "core/ops/flops.h"

#include <algorithm>
#include <string>

#include "core/graph/shape_inference.h"

namespace shardlab {
namespace {

double Elements(const TensorType& t) { return static_cast<double>(ElementCount(t.shape)); }
double Bytes(const TensorType& t) { return Elements(t) * static_cast<double>(DTypeBytes(t.dtype)); }

// FLOPs per output element of the element-wise families (forward, backward).
// Transcendentals count as a handful of FLOPs, as vendor profilers report them.
std::pair<double, double> PerElement(const std::string& type) {
  if (type == "ReLU") return {1, 1};
  if (type == "GeLU") return {8, 12};
  if (type == "FastGeLU") return {6, 10};
  if (type == "Tanh" || type == "Sigmoid") return {4, 3};
  if (type == "SiLU") return {5, 7};  // x * sigmoid(x)
  if (type == "Add" || type == "Sub" || type == "Maximum" || type == "Minimum" || type == "BiasAdd") return {1, 1};
  if (type == "Mul") return {1, 2};
  if (type == "RealDiv") return {1, 3};
  if (type == "Dropout") return {2, 1};
  if (type == "Softmax" || type == "LogSoftmax") return {5, 4};
  if (type == "LayerNorm" || type == "BatchNorm") return {8, 12};
  if (type == "RmsNorm") return {4, 8};                  // no mean to subtract, no beta
  if (type == "RotaryPositionEmbedding") return {3, 3};  // x * cos + rotate_half(x) * sin
  if (type == "SoftmaxCrossEntropyWithLogits" || type == "CrossEntropyLoss") return {6, 3};
  if (type == "SigmoidCrossEntropyWithLogits") return {5, 3};
  return {0, 0};  // data movement only: Cast, Gather, Transpose, OneHot, MoeDispatch, Concat, BroadcastTo
}

// Every (query, key) pair of a FlashAttentionScore, a causal mask's skipped
// ones too; with packed documents (document_length) only the pairs inside
// each document.
double AttentionPairs(const Operator& op, const AttentionDims& a, const Shape& q, const Shape& k) {
  const int64_t document = op.IntAttr("document_length", 0);
  const int64_t keys = document > 0 ? std::min(document, k[a.seq]) : k[a.seq];
  return static_cast<double>(q[a.batch] * q[a.heads] * q[a.seq]) * static_cast<double>(keys);
}

}  // namespace

OpWork ComputeOpWork(const Operator& op, const std::vector<TensorType>& in, const std::vector<TensorType>& out) {
  OpWork w;
  double in_bytes = 0, out_bytes = 0;
  for (const auto& t : in) in_bytes += Bytes(t);
  for (const auto& t : out) out_bytes += Bytes(t);
  const std::string& type = op.type;

  if (type == "MatMul" || type == "BatchMatMul") {
    const auto& a = in[0].shape;
    const int64_t k = op.BoolAttr("transpose_a", false) ? a[a.size() - 2] : a.back();
    w.forward_flops = 2.0 * Elements(out[0]) * static_cast<double>(k);
    w.backward_flops = 2.0 * w.forward_flops;  // dA = dY·Bᵀ and dB = Aᵀ·dY
  } else if (type == "FlashAttentionScore") {
    // Two products per (query, key) pair, Q·Kᵀ and P·V, of 2·head_dim FLOPs
    // each (the query's and the value's head_dim); a causal mask (sparse_mode 2, 3) skips the blocks above the
    // diagonal, about half. Backward recomputes Q·Kᵀ and forms dV, dP, dQ and
    // dK: five products to forward's two (FlashAttention-2, Dao 2023, §3.1.2),
    // 2.5 times forward when the head sizes agree.
    // Under context parallel each device's query rows are balanced over the
    // causal triangle (Megatron's 2 x cp chunks), so half of its pairs still count.
    const AttentionDims a = FlashAttentionDims(op);
    const auto& q = in[0].shape;
    const auto& v = in[2].shape;
    const double pairs = AttentionPairs(op, a, q, in[1].shape);
    const double causal = op.IntAttr("sparse_mode", 0) == 0 ? 1.0 : 0.5;
    const auto qd = static_cast<double>(q[a.head_dim]), vd = static_cast<double>(v[a.head_dim]);
    w.forward_flops = 2.0 * pairs * (qd + vd) * causal;
    // Q·Kᵀ, dQ and dK at the query's head_dim; dV and dP at the value's.
    w.backward_flops = 2.0 * pairs * (3 * qd + 2 * vd) * causal;
  } else if (type == "Conv2D") {
    const auto& weight = in[1].shape;
    const double per_output = 2.0 * static_cast<double>(weight[1] * weight[2] * weight[3]);
    w.forward_flops = Elements(out[0]) * per_output;
    w.backward_flops = 2.0 * w.forward_flops;
  } else if (type == "MaxPool" || type == "AvgPool") {
    const double window = static_cast<double>(op.IntAttr("kernel_size", 1) * op.IntAttr("kernel_size", 1));
    w.forward_flops = Elements(out[0]) * window;
    w.backward_flops = Elements(in[0]);
  } else if (type == "MoeCombine") {
    // A weighted sum of each token's k expert outputs; backward forms the
    // outputs' gradients (a copy) and the weights' (a dot product each).
    const double k = static_cast<double>(in[1].shape.back());
    w.forward_flops = 2.0 * k * Elements(out[0]);
    w.backward_flops = w.forward_flops;
  } else if (type == "TopK") {
    // A partial selection: about one comparison per candidate and chosen place.
    w.forward_flops = Elements(in[0]) * static_cast<double>(out[0].shape.back());
    w.backward_flops = Elements(out[0]);  // scatter the chosen gradients
  } else if (op.IsView()) {
    return w;  // a view of the same memory: no kernel (MindSpore drops it as a nop node; PyTorch's view)
  } else if (type == "ReduceSum" || type == "ReduceMean" || type == "ReduceMax" || type == "ReduceMin") {
    w.forward_flops = Elements(in[0]);
    w.backward_flops = Elements(in[0]);
  } else {
    const auto [forward, backward] = PerElement(type);
    const double elements =
        type == "SoftmaxCrossEntropyWithLogits" || type == "SigmoidCrossEntropyWithLogits" || type == "CrossEntropyLoss"
            ? Elements(in[0])
            : Elements(out[0]);
    w.forward_flops = forward * elements;
    w.backward_flops = backward * elements;
  }
  w.forward_bytes = in_bytes + out_bytes;
  w.backward_bytes = 2.0 * w.forward_bytes;  // read the saved inputs and the incoming gradient, write gradients
  return w;
}

OpWork ComputeOpWork(const Graph& graph, const Operator& op) {
  std::vector<TensorType> in, out;
  for (int t : op.inputs) in.push_back({graph.tensor(t).shape, graph.tensor(t).dtype});
  for (int t : op.outputs) out.push_back({graph.tensor(t).shape, graph.tensor(t).dtype});
  return ComputeOpWork(op, in, out);
}

ModelFlops ComputeModelFlops(const Graph& graph, const Operator& op) {
  if (op.type == "FlashAttentionScore") {
    const AttentionDims a = FlashAttentionDims(op);
    const Shape& q = graph.tensor(op.inputs[0]).shape;
    const Shape& v = graph.tensor(op.inputs[2]).shape;
    const double forward = 2.0 * AttentionPairs(op, a, q, graph.tensor(op.inputs[1]).shape) *
                           static_cast<double>(q[a.head_dim] + v[a.head_dim]);
    return {forward, 2.0 * forward};
  }
  const OpWork w = ComputeOpWork(graph, op);
  return {w.forward_flops, w.backward_flops};
}

}  // namespace shardlab
