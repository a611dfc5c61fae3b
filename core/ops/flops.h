// Floating-point work and memory traffic of one operator, computed from the
// shapes it sees. Called with full shapes it gives the unsharded cost; called
// with slice shapes it gives one device's share.
#pragma once

#include <vector>

#include "core/graph/graph.h"
#include "core/graph/shape_inference.h"

namespace shardlab {

struct OpWork {
  double forward_flops = 0;
  double backward_flops = 0;  // gradients of every input that needs one
  double forward_bytes = 0;   // bytes read and written by the forward kernel
  double backward_bytes = 0;
};

OpWork ComputeOpWork(const Operator& op, const std::vector<TensorType>& inputs, const std::vector<TensorType>& outputs);

// Convenience: the unsharded work of an operator of a graph.
OpWork ComputeOpWork(const Graph& graph, const Operator& op);

// Model FLOPs, the numerator of TFLOP/s and MFU as Megatron-LM
// (num_floating_point_operations), PaLM (appendix B) and torchtitan count them:
// the kernel's FLOPs, except that attention counts every (query, key) pair (a
// causal mask's skipped blocks too) and its backward is twice its forward
// (FlashAttention's recomputed Q·Kᵀ is hardware work, like recomputation).
struct ModelFlops {
  double forward = 0;
  double backward = 0;  // gradients of every input that needs one
};
ModelFlops ComputeModelFlops(const Graph& graph, const Operator& op);

}  // namespace shardlab
