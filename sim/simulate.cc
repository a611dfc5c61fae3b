#include "sim/simulate.h"

#include "core/analytical/analytical_engine.h"

namespace shardlab::sim {

StepResult SimulateStep(const PreparedRun& prepared, Engine engine, const TraceRequest& trace, SimGridStats* stats) {
  if (engine == Engine::kAnalytical) return Summarize(prepared.plan, RunAnalytical(prepared.plan));
  return Summarize(prepared.plan,
                   LoadSimGridBackend().run_step(prepared.plan, prepared.run.cluster, prepared.run.simulation.fidelity,
                                                 prepared.run.simulation.symmetry, trace, stats));
}

}  // namespace shardlab::sim
