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

// The most task runs (TaskRunsPerStep) the engine takes on: about 25 bytes
// and 0.08 us each (GPT-3 175B, 16 stages x 4096 micro-batches: 41 M runs,
// 1.0 GB and 3.3 s), so about 1 GiB and 3 s.
inline constexpr int64_t kMaxAnalyticalTaskRuns = 40'000'000;

// Every stage's timeline (one representative device per stage); Summarize
// turns it into the step's figures. Throws when the plan asks for more than
// kMaxAnalyticalTaskRuns.
Trace RunAnalytical(const Plan& plan);

}  // namespace shardlab
