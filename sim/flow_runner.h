// Runs expanded collectives on the platform from maestro (no actors): each
// phase's flows start together as SimGrid communications; when the last one
// completes the phase's folded latency passes as a kernel timer and the next
// phase starts; at the end the caller's continuation runs. Everything is
// driven from completion callbacks, which keeps 4096-device steps fast.
#pragma once

#include <functional>
#include <vector>

#include "sim/cluster_platform.h"
#include "sim/collective_flows.h"
#include "sim/link_usage.h"

namespace shardlab::sim {

class FlowRunner {
 public:
  explicit FlowRunner(ClusterPlatform& platform);
  ~FlowRunner();

  // Starts at the current simulated time; `done` runs when the last phase ends.
  void Run(std::vector<Phase> phases, std::function<void()> done);
  // Runs `done` after `seconds` of simulated time (compute, folded latencies).
  void After(double seconds, std::function<void()> done);

  // On a folded platform (ClusterPlatform::Fold) each flow orbit runs as its
  // flow from the orbit's representative device; flows from other devices are
  // left out. A phase's folded latency is still timed on its first flow.
  void KeepFlowsFrom(std::vector<char> representative) { representative_ = std::move(representative); }

  int64_t flows_started() const { return flows_started_; }

  // Every flow that finishes from now on is added to `recorder` (null: none).
  void RecordLinkUsage(LinkUsageRecorder* recorder) { recorder_ = recorder; }
  LinkUsageRecorder* link_usage() const { return recorder_; }
  // Whether a flow runs here (on a folded platform: it leaves an orbit's representative).
  bool Runs(const Flow& f) const { return f.src != f.dst && (representative_.empty() || representative_[f.src]); }

 private:
  struct Running;
  struct FlowRecord;
  void StartPhase(Running* r);
  void PhaseFinished(Running* r);

  ClusterPlatform& platform_;
  std::vector<char> representative_;  // per rank; empty: every flow runs
  LinkUsageRecorder* recorder_ = nullptr;
  int64_t flows_started_ = 0;
};

}  // namespace shardlab::sim
