// Time of one operator's work on one device: a roofline of the device's peak
// FLOP/s for the operator's dtype and its memory bandwidth, each scaled by
// its achieved efficiency, plus a fixed launch overhead. Operators placed on
// the host (primitive_target "CPU") run at the host's rates.
#pragma once

#include "core/config/cluster_config.h"
#include "core/graph/dtype.h"

namespace shardlab {

struct ComputeCost {
  double seconds = 0;
  bool memory_bound = false;
};

ComputeCost ComputeSeconds(double flops, double bytes, DType dtype, const ClusterSpec& cluster, bool on_host);

// The peak FLOP/s of the device for a dtype: its own entry, else float32's,
// else the largest the device lists.
double PeakFlops(const DeviceSpec& device, DType dtype);

}  // namespace shardlab
