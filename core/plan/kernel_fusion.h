// Which operators a software stack runs inside the kernel of the operator
// before them, and the memory traffic that saves: an element-wise chain
// (bias+GeLU, bias+dropout+add, scale+mask+softmax, SiLU(gate)*up) reads its
// inputs once and writes its last output once, and only its first operator
// launches a kernel. And the other way: an operator run unfused, as several
// kernels over its input (Megatron-Core's float32 cross entropy). A split
// the stack runs as views costs nothing. And the cast kernels around an FP8
// GEMM.
#pragma once

#include <algorithm>
#include <vector>

#include "core/config/software_stack.h"
#include "core/graph/graph.h"
#include "core/ops/op_layout.h"

namespace shardlab {

struct FusedKernel {
  bool follows_producer = false;    // runs inside a producer's kernel: no launch of its own
  double saved_forward_bytes = 0;   // per device: intermediates neither written nor read back
  double saved_backward_bytes = 0;  // the same for the fused backward (twice the forward's)
  // The inputs computed inside the same kernel: never written to memory, so
  // never kept for the backward either (the fused backward recomputes them
  // from what the chain read, as Megatron's fused bias-GeLU and SwiGLU do).
  std::vector<int> register_inputs;
  // An operator the stack runs as several kernels (Megatron-Core's unfused
  // cross entropy): per device, the traffic beyond what its work counts.
  double extra_forward_bytes = 0;
  double extra_backward_bytes = 0;

  bool InRegisters(int input) const {
    return std::find(register_inputs.begin(), register_inputs.end(), input) != register_inputs.end();
  }
};

// One entry per operator; all empty when the stack fuses nothing. A tensor
// between two fusible operators is kept in registers when it has that one
// consumer, both operators sit on the same pipeline stage, and the consumer
// takes it in the layout the producer leaves (no redistribution between).
std::vector<FusedKernel> PlanKernelFusion(const Graph& graph, const std::vector<OpLayout>& layouts,
                                          const SoftwareStack& stack);

// The bytes per device of the cast kernel an FP8 GEMM's pass launches
// before its product (0 for other operators): the forward quantizes the
// GEMM's input, the backward its output's gradient, as Transformer Engine
// does. Per element: read it, write a row-wise FP8 copy and, when the pass
// computes the weight's gradient (`weight_gradient`: the weight is
// trained), a column-wise (transposed) one for it; current scaling reads it
// once more first for the amax. An input a LayerNorm or RMSNorm produces
// leaves the norm's kernel already in FP8 under delayed or block scaling
// (Transformer Engine's LayerNormLinear): only the column-wise copy is made
// apart, less the bytes the norm's narrower write saves, on the norm's own
// slice (before a sequence-parallel gather, which then carries FP8:
// Fp8FromNorm). Weights are cast once a step (or kept in FP8): not counted.
double Fp8CastBytes(const Graph& graph, const std::vector<OpLayout>& layouts, int op, const SoftwareStack& stack,
                    bool backward, bool weight_gradient);

// Whether an FP8 GEMM's input leaves a LayerNorm or RMSNorm already in FP8
// (Transformer Engine's LayerNormLinear): a sequence-parallel AllGather on
// its way in then carries a byte per element, as Transformer Engine
// gathers the quantized norm output.
bool Fp8FromNorm(const Graph& graph, const Operator& op);

}  // namespace shardlab
