// The SimGrid engine as the rest of shardlab sees it: the entry points of the
// module libshardlab_simgrid.so (sim/simgrid_module.cc), the only part of
// shardlab that links SimGrid. A process loads it when it first simulates on
// SimGrid, so every other command starts without SimGrid's libraries (their
// start-up costs about 50 ms and 28 MiB). The module's calls into shardlab's
// own code resolve to the loading program's: every program that links
// shardlab_sim exports it (its INTERFACE link options, sim/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/cluster_config.h"
#include "core/config/simulation_options.h"
#include "core/plan/plan.h"
#include "core/report/trace.h"
#include "sim/collective_flows.h"

namespace shardlab::sim {

// Which devices the timeline records besides each stage's representative
// (always recorded: the step's figures come from it): by default every device
// of runs of up to 64 devices; or the devices holding `ranks`. A folded
// device's events are its representative's, listing it among their ranks.
// An enabled trace also records how busy each class of links was
// (LinkClassUsage), which costs the engine about a tenth of its time.
struct TraceRequest {
  bool enabled = false;
  std::vector<int64_t> ranks;
};

struct SimGridStats {
  int64_t flows = 0;
  int64_t collectives = 0;
  int64_t timers = 0;
};

// Bumped whenever SimGridBackend changes, so that a stale module is refused
// rather than called through the wrong table.
inline constexpr int kSimGridBackendAbi = 3;

struct SimGridBackend {
  int abi = kSimGridBackendAbi;
  // The configured build the module comes from (SHARDLAB_SIMGRID_BUILD: the
  // build folder and when it was configured). The types the table passes
  // are shardlab's own, so only a module of the loading program's build is
  // taken.
  const char* build = nullptr;
  // RunSimGrid (sim/step_engine.h): one step of `plan` on the cluster.
  Trace (*run_step)(const Plan& plan, const ClusterSpec& cluster, Fidelity fidelity, Symmetry symmetry,
                    const TraceRequest& trace, SimGridStats* stats);
  // Runs the collectives one after another, each as its phases of flows, on
  // the platform of the cluster's first `devices` devices; returns each
  // one's simulated duration in seconds.
  std::vector<double> (*time_collectives)(const ClusterSpec& cluster, int64_t devices,
                                          std::vector<std::vector<Phase>> collectives);
};

// The module's exported entry point (extern "C", unmangled).
inline constexpr const char* kSimGridBackendSymbol = "shardlab_simgrid_backend";

// Loads the module once per process and returns its table. Looks for
// $SHARDLAB_SIMGRID_MODULE when set, else libshardlab_simgrid.so next to the
// running executable, else in the build tree it was built in. Throws, in one
// line naming the paths tried and the loader's reason, when none loads.
const SimGridBackend& LoadSimGridBackend();

}  // namespace shardlab::sim
