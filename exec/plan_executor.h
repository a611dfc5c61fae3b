// Runs one rank's program of a Plan for real: the stage's forward and
// backward passes in the pipeline schedule's order, compute tasks as kernels
// of the operators' shapes (GEMMs for MatMuls, streaming copies of the
// operator's bytes otherwise), collectives on the plan's groups with the
// plan's byte counts, gradient buckets on the communication stream from the
// moment their gradients exist, pipeline transfers on the send stream. Both
// streams run concurrently where the simulator overlaps them. Every task is
// timed; the rank's passes, buckets and transfers become timeline events in
// the simulator's format.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/plan/plan.h"
#include "core/report/step_result.h"
#include "exec/communicator.h"
#include "exec/runtime.h"

namespace shardlab::exec {

struct ExecutionOptions {
  int warmup_steps = 1;
  int steps = 3;  // measured; the median step is reported
};

// Measured and closed-form seconds of one kind of task over a step.
struct TaskTypeTime {
  std::string type;  // "gemm", "memory", "allreduce", "gradient allreduce", "pipeline send", ...
  int64_t count = 0;
  double measured = 0;
  double predicted = 0;
};

struct RankExecution {
  int64_t rank = 0;
  int64_t stage = 0;
  std::vector<double> step_seconds;  // every measured step, from the start barrier to this rank's end
  double median_step_seconds = 0;
  std::vector<TraceEvent> events;  // of the median step
  std::vector<TaskTypeTime> task_types;
};

// Runs `options.warmup_steps + options.steps` steps of `rank`'s program.
// `world` spans every rank of the plan; all ranks must call this together.
RankExecution ExecutePlan(const Plan& plan, int64_t rank, Communicator& world, Runtime& runtime,
                          const ExecutionOptions& options);

// Throws std::runtime_error saying why when the executor cannot run `plan`'s
// schedule: chunks (interleaved, zero_bubble_v, dualpipe) or overlapped forward and
// backward units. Callers check before they launch ranks; ExecutePlan does too.
void CheckExecutable(const Plan& plan);

// The step as the ranks measured it, summarised like the engines' steps: a
// stage's figures and events are its first rank's (its median step).
StepResult MeasuredStep(const Plan& plan, const std::vector<RankExecution>& ranks);

nlohmann::json ToJson(const RankExecution& r);
RankExecution RankExecutionFromJson(const nlohmann::json& j);

}  // namespace shardlab::exec
