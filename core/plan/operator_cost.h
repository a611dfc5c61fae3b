// What one operator's compute costs on a device in closed form, priced the
// one way lowering prices its compute tasks: each pass at its own dtype (an
// FP8 GEMM's format, else the output's) and with the GEMM or fused-attention
// shape of its slices. The strategy search's time cost model and the GUI's
// strategy table call it, so their figures are the simulated step's for an
// operator run as its own kernel (lowering also removes the memory traffic
// that kernel fusion saves, which depends on the neighbours).
#pragma once

#include "core/config/cluster_config.h"
#include "core/cost/compute_cost.h"
#include "core/graph/graph.h"
#include "core/ops/op_layout.h"

namespace shardlab {

// The per-device kernel of an operator's forward or backward pass: a MatMul
// or BatchMatMul's product from its input slices (leading dimensions of the
// first input that the second lacks fold into m: a matrix weight's, or each
// expert's in a mixture of experts), a fused attention's
// key length and head size. `fused`: it runs inside its producer's kernel.
KernelShape OperatorKernel(const Operator& op, const OpLayout& layout, bool backward, bool fused = false);

// The dtype whose peak an operator's pass runs at: its FP8 GEMM format, else
// its first output's (float32 for an operator without outputs).
DType PassDType(const Graph& graph, const Operator& op, bool backward);

// The share of an operator's backward work that remains when some inputs
// need no gradient (frozen weights: LoRA's base model): a product's backward
// is one product per operand (dA = dY·Bᵀ, dB = Aᵀ·dY), a frozen operand's
// skipped; a Gather's backward only forms its table's gradient. 1 otherwise.
double BackwardShare(const Graph& graph, const Operator& op);

// The forward, plus the backward (its BackwardShare) when `training`, of an operator under
// `layout` on one of the cluster's devices (or its host, for a host operator).
double OperatorComputeSeconds(const Graph& graph, const Operator& op, const OpLayout& layout,
                              const ClusterSpec& cluster, bool training);

}  // namespace shardlab
