// The SimGrid engine: executes a Plan on every device of the cluster's
// platform. Each device runs its stage's program (its pipeline schedule of
// forward and backward passes); compute runs as timers, collectives start when
// every member of their group has arrived and run as flows that contend for
// the links they share, pipeline transfers are flows between neighbouring
// stages, gradient buckets run on a separate communication stream as soon as
// their gradients exist, and the optimizer closes the step.
#pragma once

#include <vector>

#include "core/config/cluster_config.h"
#include "core/plan/plan.h"
#include "core/report/trace.h"
#include "sim/collective_flows.h"
#include "sim/simgrid_backend.h"

namespace shardlab::sim {

// The most task runs (TaskRunsPerStep) the engine takes on: about 19 us each
// on the shipped GPT-3 175B run (320 k runs, 6.2 s), so about a minute.
inline constexpr int64_t kMaxSimGridTaskRuns = 3'000'000;

// The most seconds of simulation the engine takes on once it knows which
// devices it simulates (EstimateSimGridSeconds).
inline constexpr double kMaxSimGridSeconds = 60;

// What a step costs SimGrid on a 2-core machine: `transfers` pipeline
// transfers (one flow each per simulated device and pass), `alltoall_flows`
// flows of AlltoAlls (many started at once), `steps` pass steps (one per pass
// for a lane whose passes run in closed form), `devices` simulated devices.
// Within about a factor of two of measured runs.
double EstimateSimGridSeconds(int64_t transfers, int64_t alltoall_flows, int64_t steps, int64_t devices);

// One SimGrid engine per process: call once per process. Throws
// EngineLimitError when the plan asks for more than kMaxSimGridTaskRuns, or, once the symmetry is known,
// for more than kMaxSimGridSeconds of simulation. With Symmetry::kFold only one
// device per orbit of symmetric devices is simulated (sim/step_symmetry.h);
// the trace's detail says how many and why not fewer.
Trace RunSimGrid(const Plan& plan, const ClusterSpec& cluster, Fidelity fidelity, Symmetry symmetry,
                 const TraceRequest& trace, SimGridStats* stats = nullptr);

}  // namespace shardlab::sim
