#include "core/flow/prepared_run.h"

#include "core/plan/lowering.h"
#include "core/search/choose_strategies.h"

namespace shardlab {

PreparedRun Prepare(const RunSpec& run) {
  PreparedRun p;
  p.run = run;
  p.graph = BuildRunGraph(run);
  p.sharded = ChooseStrategies(p.run, p.graph);
  p.plan = LowerToPlan(p.run, p.sharded);
  return p;
}

PreparedRun PrepareWithStrategies(const RunSpec& run, const std::vector<Strategy>& strategies) {
  PreparedRun p;
  p.run = run;
  p.graph = BuildRunGraph(run);
  p.sharded = ApplyGivenStrategies(p.run, p.graph, strategies);
  p.plan = LowerToPlan(p.run, p.sharded);
  return p;
}

PreparedRun Relower(const PreparedRun& prepared, const RunSpec& variant) {
  PreparedRun p;
  p.run = variant;
  p.graph = prepared.graph;
  p.sharded = prepared.sharded;
  p.plan = LowerToPlan(p.run, p.sharded);
  return p;
}

}  // namespace shardlab
