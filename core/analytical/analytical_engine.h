// The analytical engine: closed-form task durations scheduled without
// contention. Each stage runs its pipeline schedule; a micro-batch pass waits
// for its neighbour stage's pass plus the point-to-point transfer; gradient
// buckets run on a communication stream as soon as their last gradient exists
// and the previous bucket is done; the optimizer follows the last bucket.
// Milliseconds for 4096 devices, for search loops and for `--engine both`.
#pragma once

#include "core/plan/plan.h"
#include "core/report/trace.h"

namespace shardlab {

// Every stage's timeline (one representative device per stage); Summarize
// turns it into the step's figures.
Trace RunAnalytical(const Plan& plan);

}  // namespace shardlab
