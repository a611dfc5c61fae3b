#include "core/plan/operator_cost.h"

#include <algorithm>

#include "core/graph/fp8_format.h"
#include "core/graph/shape_inference.h"
#include "core/layout/tensor_map.h"

namespace shardlab {
namespace {

GemmShape GemmOf(const Operator& op, const OpLayout& layout) {
  if (op.type != "MatMul" && op.type != "BatchMatMul") return {};
  const Shape a = layout.inputs[0].SliceShape(), b = layout.inputs[1].SliceShape();
  if (a.size() < 2 || b.size() < 2) return {};
  const bool ta = op.BoolAttr("transpose_a", false), tb = op.BoolAttr("transpose_b", false);
  const size_t ra = a.size(), rb = b.size();
  GemmShape g{ta ? a[ra - 1] : a[ra - 2], tb ? b[rb - 2] : b[rb - 1], ta ? a[ra - 2] : a[ra - 1]};
  // The first input's leading dimensions that the second lacks broadcast
  // against one weight: their rows join m (a mixture of experts' groups:
  // every group's tokens for an expert meet one expert's weight, as the
  // stacks' grouped GEMMs run them). The shared ones are the batch.
  const size_t broadcast = ra > rb ? ra - rb : 0;
  for (size_t i = 0; i + 2 < ra; ++i) {
    (i < broadcast ? g.m : g.batch) *= a[i];
    if (i < broadcast) g.groups *= a[i];
  }
  return g;
}

AttentionShape AttentionOf(const Operator& op, const OpLayout& layout) {
  if (op.type != "FlashAttentionScore") return {};
  const Shape q = layout.inputs[0].SliceShape(), k = layout.inputs[1].SliceShape();
  if (q.size() != 4 || k.size() != 4) return {};
  const int64_t mode = op.IntAttr("sparse_mode", 0);
  const AttentionDims a = FlashAttentionDims(op);
  // Packed documents: each query attends within its own document only.
  const int64_t document = op.IntAttr("document_length", 0);
  AttentionShape shape{document > 0 ? std::min(document, k[a.seq]) : k[a.seq], q[a.head_dim], mode == 2 || mode == 3};
  // A ring attention with its queries split by sequence over the context-
  // parallel group runs one kernel per chunk of the keys as they come round
  // (Megatron's p2p context parallelism); gathered keys go in one kernel.
  const int64_t seq_map = layout.inputs[0].tensor_map()[a.seq];
  if (op.BoolAttr("enable_ring_attention", false) && seq_map != kNotSplit) {
    const int64_t cp = layout.device_matrix[DimFromMapValue(seq_map, layout.device_matrix.size())];
    if (cp > 1 && shape.kv_length % cp == 0) {
      shape.kv_length /= cp;
      shape.steps = cp;
    }
  }
  return shape;
}

}  // namespace

KernelShape OperatorKernel(const Operator& op, const OpLayout& layout, bool backward, bool fused) {
  return {GemmOf(op, layout), AttentionOf(op, layout), backward, fused};
}

DType PassDType(const Graph& graph, const Operator& op, bool backward) {
  if (const auto fp8 = Fp8GemmDType(op, backward)) return *fp8;
  return op.outputs.empty() ? DType::kFloat32 : graph.tensor(op.outputs.front()).dtype;
}

double BackwardShare(const Graph& graph, const Operator& op) {
  const auto frozen = [&](int t) { return graph.tensor(t).is_parameter() && !graph.tensor(t).requires_grad; };
  if (op.type == "MatMul" || op.type == "BatchMatMul")
    return (frozen(op.inputs[0]) ? 0.0 : 0.5) + (frozen(op.inputs[1]) ? 0.0 : 0.5);
  if (op.type == "Gather") return frozen(op.inputs[0]) ? 0.0 : 1.0;
  return 1.0;
}

double OperatorComputeSeconds(const Graph& graph, const Operator& op, const OpLayout& layout,
                              const ClusterSpec& cluster, bool training) {
  const double share = BackwardShare(graph, op);
  auto pass = [&](bool backward) {
    const double flops = backward ? share * layout.work.backward_flops : layout.work.forward_flops;
    const double bytes = backward ? share * layout.work.backward_bytes : layout.work.forward_bytes;
    return ComputeSeconds(flops, bytes, PassDType(graph, op, backward), cluster, op.OnHost(),
                          OperatorKernel(op, layout, backward))
        .seconds;
  };
  return pass(false) + (training ? pass(true) : 0);
}

}  // namespace shardlab
