// libshardlab_simgrid.so's entry point: the table of sim/simgrid_backend.h
// over the step engine (step_engine.cc) and the flow runner (flow_runner.cc).
// This module is the only thing that links SimGrid.
#include <functional>

#include <simgrid/s4u/Engine.hpp>

#include "core/util/progress_report.h"
#include "sim/cluster_platform.h"
#include "sim/flow_runner.h"
#include "sim/simgrid_backend.h"
#include "sim/step_engine.h"

namespace shardlab::sim {
namespace {

std::vector<double> TimeCollectives(const ClusterSpec& cluster, int64_t devices,
                                    std::vector<std::vector<Phase>> collectives) {
  ClusterPlatform platform(cluster, devices);
  FlowRunner runner(platform);
  std::vector<double> seconds(collectives.size());
  double start = 0;
  std::function<void(size_t)> launch = [&](size_t i) {
    if (i == collectives.size()) return;
    start = simgrid::s4u::Engine::get_clock();
    runner.Run(std::move(collectives[i]), [&, i] {
      seconds[i] = simgrid::s4u::Engine::get_clock() - start;
      ReportProgress(static_cast<double>(i + 1), static_cast<double>(collectives.size()));
      launch(i + 1);
    });
  };
  launch(0);
  platform.engine().run();
  return seconds;
}

}  // namespace
}  // namespace shardlab::sim

extern "C" __attribute__((visibility("default"))) const shardlab::sim::SimGridBackend* shardlab_simgrid_backend() {
  using namespace shardlab::sim;
  static const SimGridBackend backend{kSimGridBackendAbi, SHARDLAB_SIMGRID_BUILD, &RunSimGrid, &TimeCollectives};
  return &backend;
}
