// The micro-benchmarks that calibration fits: collectives over the world of
// ranks swept over sizes (nccl-tests' conventions: size is the larger buffer
// of a rank, algbw = size / time, busbw = algbw * the collective's factor),
// and GEMMs and streaming copies swept over shapes on one device. Each
// iteration starts after a barrier; a collective's time is the slowest rank's,
// and the median over iterations is reported.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/cost/collective_cost.h"
#include "core/cost/compute_cost.h"
#include "exec/rank_launcher.h"

namespace shardlab::exec {

struct CollectiveBenchOptions {
  std::vector<Collective> ops;
  std::vector<double> sizes;  // bytes, nccl-tests' size
  int warmup = 3;
  int repeats = 10;
};

struct CollectiveSample {
  Collective op = Collective::kAllReduce;
  std::string algorithm;  // what the back end ran: ring, pairwise, direct; "auto" for NCCL
  std::string scope = "intra_server";
  int ranks = 1;
  double size = 0;     // nccl-tests' size, bytes
  double seconds = 0;  // median over iterations of the slowest rank
  double min_seconds = 0, max_seconds = 0;
  double algbw() const { return seconds > 0 ? size / seconds : 0; }
  double busbw() const { return algbw() * BusBandwidthFactor(op, ranks); }
};

// Runs on every rank (RunRanks); returns this rank's iteration times as JSON.
std::string CollectiveBenchRank(RankContext& context, const CollectiveBenchOptions& options);
// Combines the ranks' outputs into one sample per (op, size).
std::vector<CollectiveSample> CombineCollectiveBench(const CollectiveBenchOptions& options, const std::string& backend,
                                                     const std::vector<std::string>& rank_outputs);

struct GemmBenchOptions {
  std::vector<GemmShape> shapes;
  std::vector<double> copy_sizes;  // bytes moved by a streaming copy (read + write)
  int warmup = 2;
  int repeats = 5;
  // Kernels launched back to back per timing, the time divided among them:
  // one kernel between two GPU events also times the events (~15 us on an
  // H100), while a stream of kernels pays about 1 us each.
  int burst = 1;
};

// Square products from 32 (CPU) or 256 (CUDA) up and the tall-skinny products
// of transformer layers.
GemmBenchOptions DefaultGemmBench(const std::string& runtime);

struct GemmSample {
  GemmShape shape;
  double seconds = 0;  // median; the slowest rank's when several ran at once
  double flops() const {
    return 2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k);
  }
};

struct CopySample {
  double bytes = 0;
  double seconds = 0;
};

struct GemmBenchResult {
  std::vector<GemmSample> gemms;
  std::vector<CopySample> copies;
};

std::string GemmBenchRank(RankContext& context, const GemmBenchOptions& options);
GemmBenchResult CombineGemmBench(const GemmBenchOptions& options, const std::vector<std::string>& rank_outputs);

// Measurement files (the input of `shardlab calibrate`): what ran where, and the samples.
struct MeasurementContext {
  std::string backend;  // gloo, nccl
  std::string runtime;  // cpu, cuda
  std::string device;   // CPU or GPU model
  int ranks = 1;
};
MeasurementContext DescribeRanks(const LaunchOptions& launch, const std::string& device);
nlohmann::json CollectiveMeasurements(const MeasurementContext& context, const std::vector<CollectiveSample>& samples);
nlohmann::json GemmMeasurements(const MeasurementContext& context, const GemmBenchResult& result);
// Software versions and the machine, for measurement and calibration files;
// CUDA's, cuBLAS's and NCCL's only for the nccl back end (which loads them).
nlohmann::json SoftwareVersions(const std::string& backend);
std::string HostName();
std::string UtcNow();

}  // namespace shardlab::exec
