// The analytical engine: closed-form task durations scheduled without
// contention. Each stage runs its pipeline schedule; a micro-batch pass waits
// for its neighbour stage's pass plus the point-to-point transfer; gradient
// buckets run on a communication stream as soon as their last gradient exists
// and the previous bucket is done; the optimizer follows the last bucket.
// Milliseconds for 4096 devices, for search loops and for `--engine both`.
#pragma once

#include "core/plan/plan.h"
#include "core/report/step_result.h"

namespace shardlab {

// `with_events` keeps the per-stage timeline for traces and the GUI.
StepResult RunAnalytical(const Plan& plan, bool with_events = true);

}  // namespace shardlab
