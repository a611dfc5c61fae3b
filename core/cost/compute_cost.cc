#include "core/cost/compute_cost.h"

#include <algorithm>

namespace shardlab {

double PeakFlops(const DeviceSpec& device, DType dtype) {
  if (auto it = device.peak_flops.find(dtype); it != device.peak_flops.end()) return it->second;
  // Tensor cores run E5M2 operands at the E4M3 rate.
  if (dtype == DType::kFloat8E5M2) return PeakFlops(device, DType::kFloat8E4M3);
  if (auto it = device.peak_flops.find(DType::kFloat32); it != device.peak_flops.end()) return it->second;
  double best = 0;
  for (const auto& [d, flops] : device.peak_flops) best = std::max(best, flops);
  return best;
}

ComputeCost ComputeSeconds(double flops, double bytes, DType dtype, const ClusterSpec& cluster, bool on_host,
                           const GemmShape& gemm) {
  ComputeCost c;
  if (flops == 0 && bytes == 0) return c;
  double compute, memory;
  if (on_host) {
    compute = flops / cluster.host.cpu_flops;
    memory = bytes / cluster.host.memory_bandwidth;
  } else {
    const DeviceSpec& d = cluster.device;
    double efficiency = d.compute_efficiency;
    if (!gemm.empty() && d.gemm_half_size > 0) {
      const double smallest = static_cast<double>(std::min({gemm.m, gemm.n, gemm.k}));
      efficiency *= smallest / (smallest + d.gemm_half_size);
    }
    compute = flops / (PeakFlops(d, dtype) * efficiency);
    memory = bytes / (d.memory_bandwidth * d.memory_efficiency);
  }
  c.memory_bound = memory > compute;
  c.seconds = std::max(compute, memory) + (on_host ? 0.0 : cluster.device.kernel_overhead);
  return c;
}

}  // namespace shardlab
