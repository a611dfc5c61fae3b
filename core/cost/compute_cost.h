// Time of one operator's work on one device: a roofline of the device's peak
// FLOP/s for the operator's dtype and its memory bandwidth, each scaled by
// the efficiency its kernel reaches, plus a fixed launch overhead. GEMMs lose
// efficiency on small dimensions, on partly idle tile waves and on misaligned
// operands; fused attention has its own efficiency. Operators placed on the
// host (primitive_target "CPU") run at the host's rates.
#pragma once

#include <cstdint>

#include "core/config/cluster_config.h"
#include "core/graph/dtype.h"

namespace shardlab {

// The product a GEMM-like operator runs per device: C[m,n] = A[m,k] B[k,n]
// (leading dimensions of the first input that the second lacks folded into m), `batch`
// of them in one batched kernel (a mixture of experts' experts). Zero for
// operators that are not GEMMs.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  // Of m's rows, the blocks that came from leading dimensions the second
  // input lacks (a mixture of experts' token groups); 1 otherwise.
  int64_t groups = 1;
  bool empty() const { return m == 0 || n == 0 || k == 0; }
  bool operator==(const GemmShape&) const = default;
};

// What one fused attention kernel sees per device: the keys each query
// attends to (the slice's key length) and the query/key head size.
struct AttentionShape {
  int64_t kv_length = 0;  // of one kernel
  int64_t head_dim = 0;
  bool causal = false;  // each query sees half the keys on average
  // Kernels the pass runs one after another, each over kv_length keys (a
  // ring attention's steps, one per context-parallel chunk of the keys).
  int64_t steps = 1;
  bool empty() const { return kv_length == 0 || head_dim == 0; }
  bool operator==(const AttentionShape&) const = default;
};

// Which products of C = A B a backward GEMM runs.
enum class GemmGradient : uint8_t {
  kBoth,    // dA = dC B^T, then dB = A^T dC (one backward pass)
  kFirst,   // dA alone: the input-gradient half of a backward split in two (zero-bubble schedules)
  kSecond,  // dB alone: the weight-gradient half
};

// The kernel an operator's pass runs, when it is one whose efficiency
// depends on its shape. A backward GEMM runs dA = dC B^T and dB = A^T dC
// (or one of them, `gradient`).
struct KernelShape {
  GemmShape gemm;
  AttentionShape attention;
  bool backward = false;
  bool fused = false;  // runs inside the kernel of the operator before it: no launch of its own
  GemmGradient gradient = GemmGradient::kBoth;
  bool operator==(const KernelShape&) const = default;
};

struct ComputeCost {
  double seconds = 0;
  bool memory_bound = false;
};

ComputeCost ComputeSeconds(double flops, double bytes, DType dtype, const ClusterSpec& cluster, bool on_host,
                           const KernelShape& kernel = {});

// The fraction of the dtype's peak a GEMM of this shape reaches on the
// device: the dtype's gemm_efficiency (else compute_efficiency), the
// small-dimension factor, the best tile's wave fill and the alignment rule
// (DeviceSpec).
double GemmEfficiency(const DeviceSpec& device, const GemmShape& gemm, DType dtype, bool backward,
                      GemmGradient gradient = GemmGradient::kBoth);

// The fraction of peak fused attention of this shape reaches (the device's
// attention figures, else compute_efficiency).
double AttentionEfficiency(const DeviceSpec& device, const AttentionShape& attention, bool backward);

// The peak FLOP/s of the device for a dtype: its own entry, else float32's,
// else the largest the device lists.
double PeakFlops(const DeviceSpec& device, DType dtype);

}  // namespace shardlab
