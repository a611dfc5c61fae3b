#include "sim/simulate.h"

#include <stdexcept>

#include "core/analytical/analytical_engine.h"

namespace shardlab::sim {

StepResult SimulateStep(const PreparedRun& prepared, const std::string& engine, const TraceRequest& trace,
                        SimGridStats* stats) {
  const std::string& chosen = engine.empty() ? prepared.run.simulation.engine : engine;
  if (chosen == "analytical") return Summarize(prepared.plan, RunAnalytical(prepared.plan));
  if (chosen != "simgrid" && chosen != "both") throw std::invalid_argument("unknown engine \"" + chosen + "\"");
  const Fidelity fidelity = prepared.run.simulation.fidelity == "step" ? Fidelity::kStep : Fidelity::kAggregated;
  return Summarize(prepared.plan, RunSimGrid(prepared.plan, prepared.run.cluster, fidelity, trace, stats));
}

}  // namespace shardlab::sim
