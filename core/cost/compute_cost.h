// Time of one operator's work on one device: a roofline of the device's peak
// FLOP/s for the operator's dtype and its memory bandwidth, each scaled by
// its achieved efficiency, plus a fixed launch overhead. Operators placed on
// the host (primitive_target "CPU") run at the host's rates.
#pragma once

#include <cstdint>

#include "core/config/cluster_config.h"
#include "core/graph/dtype.h"

namespace shardlab {

// The product a GEMM-like operator runs per device: C[m,n] = A[m,k] B[k,n]
// (batch dimensions folded into m when the second input is a matrix). Zero
// for operators that are not GEMMs.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool empty() const { return m == 0 || n == 0 || k == 0; }
  bool operator==(const GemmShape&) const = default;
};

struct ComputeCost {
  double seconds = 0;
  bool memory_bound = false;
};

// A GEMM's shape, when known, lowers its efficiency on small products
// (DeviceSpec::gemm_half_size).
ComputeCost ComputeSeconds(double flops, double bytes, DType dtype, const ClusterSpec& cluster, bool on_host,
                           const GemmShape& gemm = {});

// The peak FLOP/s of the device for a dtype: its own entry, else float32's,
// else the largest the device lists.
double PeakFlops(const DeviceSpec& device, DType dtype);

}  // namespace shardlab
