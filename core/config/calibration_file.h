// A calibration file: cost-model parameters fitted to measurements of a real
// machine (`shardlab calibrate`, core/calibration/fit_calibration.h), and how
// a cluster takes them. Per collective, algorithm, scope and group size a
// latency and an inverse bandwidth (t = latency + bytes * seconds_per_byte)
// and the per-step link figures that make the collective's closed form
// reproduce them; a GEMM efficiency model over shapes
// (t = overhead + flops / peak * (1 + half_size / min(m, n, k))); the memory
// bandwidth of streaming copies. Versioned JSON that says which hardware and
// software the measurements came from and when.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/comm/collective.h"
#include "core/config/cluster_config.h"

namespace shardlab {

class JsonNode;

struct FitQuality {
  int samples = 0;
  double rms_relative_residual = 0;
  double max_relative_residual = 0;
  int outliers = 0;
};

struct CollectiveFit {
  Collective op = Collective::kAllReduce;
  std::string algorithm;  // what ran
  NetworkScope scope = NetworkScope::kIntraServer;
  int ranks = 1;
  double latency = 0;           // seconds
  double seconds_per_byte = 0;  // per byte of the simulator's size (AllGather: a rank's input)
  CalibratedLink link;          // per step and per device, for the closed forms
  FitQuality quality;
  FitQuality large;  // the residuals of the samples of 1 MiB and more
};

struct GemmFit {
  std::string dtype;
  double peak_flops = 0;  // asymptotic FLOP/s of large products
  double half_size = 0;   // DeviceSpec::gemm_half_size: peak / (1 + half_size (1/m + 1/n) + half_depth / k)
  double half_depth = 0;  // DeviceSpec::gemm_half_depth
  double overhead = 0;    // seconds per kernel
  FitQuality quality;
};

struct CopyFit {
  double bandwidth = 0;  // bytes read + written per second
  double overhead = 0;
  FitQuality quality;
};

struct Calibration {
  int version = 1;
  std::string created;
  nlohmann::json hardware;  // backend, runtime, device, ranks, hostname
  nlohmann::json software;  // versions the measurements ran with
  std::vector<CollectiveFit> collectives;
  std::optional<GemmFit> gemm;
  std::optional<CopyFit> copy;
};

// The collectives a calibration measures (a measurement or calibration
// file's "op"): every collective but SendRecv.
std::vector<std::string> CalibratedCollectiveNames();

nlohmann::json ToJson(const Calibration& c);
Calibration ReadCalibration(const JsonNode& node);
Calibration LoadCalibrationFile(const std::string& path);

// The link figures under which a closed form reproduces a fit's line:
// bandwidth = factor / seconds_per_byte and per-step latency = latency /
// steps, with the ring's factor and steps (AllReduce 2(n-1)/n and 2(n-1)),
// or the full mesh's when `full_mesh` (every rank exchanging with each peer
// over its own link: AllReduce 2/n and 2; the bandwidth is one link's). The
// fit's floor is kept.
CalibratedLink LinkOfFit(const CollectiveFit& f, bool full_mesh);

// The cluster with the calibrated figures: the device's peak FLOP/s for the
// fitted dtype, efficiency 1, shape model and kernel overhead; its memory
// bandwidth; every collective's link; the fabric's own link figures from the
// AllReduce fits. Records `source` as the cluster's calibration file.
void ApplyCalibration(const Calibration& c, const std::string& source, ClusterSpec* cluster);

}  // namespace shardlab
