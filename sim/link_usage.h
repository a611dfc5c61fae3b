// How busy each class of links is over a simulated step: every finished flow
// adds its bytes, spread evenly over its lifetime, to the links of its route,
// binned in time per class of links (ClusterPlatform::LinkClasses), and to its
// links' totals, which name the busiest link and count the links by their
// utilisation over the step. The bins start at 0.1 ms and
// double in width (merging pairs) whenever the step outgrows them, so memory
// stays bounded whatever the step's length.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/report/trace.h"
#include "sim/cluster_platform.h"

namespace shardlab::sim {

// Traffic the engine times in closed form rather than as flows (collectives
// inside a lane): bytes on links of the unfolded platform, each link's own
// (on a folded platform such traffic need not be alike on the links of an
// orbit), prepared once (LinkUsageRecorder::Prepare) and added each time it runs.
struct ClosedFormTraffic {
  std::vector<std::pair<int32_t, double>> link_bytes;  // (link id, bytes), each link once
  std::vector<double> class_bytes;                     // per class, in folded units (bytes over the fold's order)
};

class LinkUsageRecorder {
 public:
  explicit LinkUsageRecorder(const ClusterPlatform& platform);

  // A flow SimGrid ran, of `bytes` from device `src` to `dst` over [start,
  // end] seconds; on a folded platform it stands for its orbit's flows.
  void AddFlow(int64_t src, int64_t dst, double bytes, double start, double end);
  // Closed-form traffic of `link_bytes` (link id, bytes; each link once).
  ClosedFormTraffic Prepare(std::vector<std::pair<int32_t, double>> link_bytes) const;
  // `traffic` over [start, end]; it must live until Result.
  void AddClosedForm(const ClosedFormTraffic& traffic, double start, double end);

  // Utilisation per class over [0, step_seconds]; classes that carried nothing are left out.
  std::vector<LinkClassUsage> Result(double step_seconds);

 private:
  static constexpr size_t kBins = 256;
  // Widens the bins until they reach `end`.
  void Grow(double end);
  // Spreads `bytes` on class `c` over [start, end].
  void AddToBins(int32_t c, double bytes, double start, double end);

  const ClusterPlatform& platform_;
  std::vector<ClusterPlatform::LinkClass> classes_;
  std::vector<int32_t> class_of_;   // per link id: its class, -1 for none
  std::vector<double> flow_bytes_;  // per (folded) link id, over the step: AddFlow
  // AddClosedForm: each traffic with its runs, in the order first added (so
  // Result sums in the same order on every run).
  std::vector<std::pair<const ClosedFormTraffic*, int64_t>> closed_form_runs_;
  std::unordered_map<const ClosedFormTraffic*, size_t> closed_form_index_;
  std::vector<std::vector<double>> bytes_;  // per class, per bin
  double bin_seconds_ = 1e-4;
  std::vector<int32_t> route_;  // scratch
};

}  // namespace shardlab::sim
