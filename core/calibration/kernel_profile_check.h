// How well a cluster's device profile reproduces kernel micro-benchmarks of
// its device (the JSON `bench/gpu/kernels.py` writes): every GEMM, batched
// GEMM, fused-attention pass and memory-bound kernel timed there, priced by
// the same compute model the engines use, summarised per kernel family as the
// measured throughput's range and the model's relative errors. Kernels shorter
// than kTimerFloorSeconds sit on the timer's floor and are left out.
#pragma once

#include <string>
#include <vector>

#include "core/config/cluster_config.h"

namespace shardlab {

class JsonNode;

inline constexpr double kTimerFloorSeconds = 60e-6;

// One family of kernels: what was measured and how far the model is from it.
struct KernelFamilyCheck {
  std::string family;  // "GEMM bfloat16", "batched GEMM bfloat16", "attention (cudnn_attention)", "memory copy", ...
  std::string unit;    // of the measured range: "TFLOP/s" or "GB/s"
  size_t samples = 0;  // kernels (an attention case counts its forward and its backward)
  double measured_min = 0, measured_max = 0;
  // |predicted / measured - 1| over the samples: median, 90th percentile, largest.
  double median_error = 0, p90_error = 0, max_error = 0;
  // The median of predicted / measured - 1 of the times: negative when the
  // model is faster than the device.
  double median_signed_error = 0;
};

// One kernel timed: its throughput measured and as the model predicts it.
struct KernelSample {
  std::string group;  // of the measurement file: "gemm", "gemm_waves", "flash_attention", ...
  std::string family;
  std::string kernel;  // "4096x4096x4096 NN", "64 x 128x2048x7168 NN", "b8 h64 s1024 d64 causal backward", ...
  std::string unit;    // "TFLOP/s" or "GB/s"
  double measured = 0, predicted = 0;  // in the unit
};

struct KernelProfileCheck {
  std::string device;  // as the measurement file names it
  std::vector<KernelFamilyCheck> families;
  // Groups in name order (as the JSON reader keeps an object's keys), each
  // group's kernels in the file's order.
  std::vector<KernelSample> samples;

  // The family named `family`, or nullptr.
  const KernelFamilyCheck* Find(const std::string& family) const;
};

// Checks `cluster`'s device profile against one measurement file.
KernelProfileCheck CheckKernelProfile(const JsonNode& measurements, const ClusterSpec& cluster);

}  // namespace shardlab
