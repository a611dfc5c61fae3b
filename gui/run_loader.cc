#include "gui/run_loader.h"

#include "core/analytical/analytical_engine.h"
#include "core/ops/graph_layouts.h"
#include "core/plan/lowering.h"

namespace shardlab::gui {

StepResult SimulateForView(const RunSpec& run) {
  const Graph graph = BuildRunGraph(run);
  const Plan plan = LowerToPlan(run, graph, InferGraphLayouts(graph, run.parallel.devices_per_stage()));
  return RunAnalytical(plan, true);
}

}  // namespace shardlab::gui
