// A run carried through the data flow up to the engines: the run, its
// operator graph, the strategies chosen for it and the plan they lower to.
// `Prepare` is what every command, the GUI's loader and the benchmarks call,
// so one run file has one set of strategies and one plan everywhere.
#pragma once

#include <vector>

#include "core/config/run_config.h"
#include "core/ops/sharded_graph.h"
#include "core/plan/plan.h"

namespace shardlab {

struct PreparedRun {
  RunSpec run;
  Graph graph;           // as the model builds it, before strategies
  ShardedGraph sharded;  // ChooseStrategies(run, graph)
  Plan plan;             // LowerToPlan(run, sharded)
};

// RunSpec -> Graph -> ShardedGraph -> Plan.
PreparedRun Prepare(const RunSpec& run);

// The same with the strategies a document fixes (ApplyGivenStrategies)
// instead of choosing them.
PreparedRun PrepareWithStrategies(const RunSpec& run, const std::vector<Strategy>& strategies);

// The prepared run's strategies lowered under `variant`, a run that differs
// from it only in settings that lowering reads (gradient fusion, say): the
// fusion tuner's candidates keep their strategies without a second search.
PreparedRun Relower(const PreparedRun& prepared, const RunSpec& variant);

}  // namespace shardlab
