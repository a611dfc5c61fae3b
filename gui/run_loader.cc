#include "gui/run_loader.h"

#include "core/analytical/analytical_engine.h"
#include "core/cost/compute_cost.h"
#include "core/ops/graph_layouts.h"
#include "core/plan/lowering.h"

namespace shardlab::gui {

RunView SimulateForView(const RunSpec& run) {
  const Graph graph = BuildRunGraph(run);
  const std::vector<OpLayout> layouts = InferGraphLayouts(graph, run.parallel.devices_per_stage());
  RunView view;
  view.result = RunAnalytical(LowerToPlan(run, graph, layouts), true);
  for (size_t i = 0; i < layouts.size(); ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    const OpLayout& l = layouts[i];
    const DType dtype = op.outputs.empty() ? DType::kFloat32 : graph.tensor(op.outputs[0]).dtype;
    const double seconds = ComputeSeconds(l.work.forward_flops + l.work.backward_flops,
                                          l.work.forward_bytes + l.work.backward_bytes, dtype, run.cluster, false)
                               .seconds;
    view.strategies.push_back({QString::fromStdString(op.name), QString::fromStdString(op.type),
                               QString::fromStdString(StrategyToString(l.strategy)),
                               QString::fromStdString(StrategyToString({l.device_matrix})),
                               QString::fromStdString(CommunicationSummary(l)), 1e3 * seconds});
  }
  return view;
}

}  // namespace shardlab::gui
