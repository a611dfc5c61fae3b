// The one way every command, the GUI and the benchmarks simulate a prepared
// run's step: SimGrid (the run's fidelity) or the analytical engine, their
// trace summarised by Summarize. The analytical engine traces every stage
// whatever `trace` asks; SimGrid each stage's first device and those asked for.
#pragma once

#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
#include "sim/simgrid_backend.h"

namespace shardlab::sim {

// Engine::kBoth simulates with SimGrid (callers that compare run both).
// SimGrid runs load the engine's module (LoadSimGridBackend). SimGrid allows
// one engine per process: a process that simulates several steps with
// SimGrid runs each in a child.
StepResult SimulateStep(const PreparedRun& prepared, Engine engine, const TraceRequest& trace = {},
                        SimGridStats* stats = nullptr);

}  // namespace shardlab::sim
