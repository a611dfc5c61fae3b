// A unit of overlapped passes (simulation.overlap_forward_backward): a
// forward and the backward of another micro-batch run together, each pass's
// blocking collectives beside the other's compute, as Megatron's combined
// 1F1B runs a layer's forward beside another micro-batch's backward to hide
// the expert AlltoAlls, and DualPipe its overlapped chunks. Both engines walk
// a unit as one pass of merged steps (OverlapSteps) over the stage's task
// lists laid end to end (UnitTasks), and split its time among its items for
// the timeline (UnitSpans).
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"
#include "core/plan/plan.h"

namespace shardlab {

// The stage's tasks as units index them: its backward, then its
// weight-gradient pass, then its forward.
std::vector<Task> UnitTasks(const StageProgram& stage);

// Merges two passes' steps into one sequence, ping-pong: a pass runs its
// steps until its next is a blocking collective of the `overlapped`
// dimensions; that collective is issued on a side stream (the prefetch
// stream's machinery: one collective after another) as the other pass's
// next step starts, and the other pass runs its steps (compute, and
// collectives of other dimensions, which hold the compute stream as they do
// alone) until it reaches such a collective itself; then the first pass goes
// on, once its collective has ended. Each pass keeps its own order.
std::vector<PassStep> OverlapSteps(const std::vector<PassStep>& a, const std::vector<PassStep>& b,
                                   const std::vector<Task>& tasks, const PassOverlap& overlapped);

struct UnitPass {
  std::vector<PassStep> steps;  // over UnitTasks
  double seconds = 0;           // the steps in closed form (ClosedFormPass)
  // Per item of the unit: its own compute (and its share of what the
  // collectives beside it held back) and its collectives, in closed form.
  std::vector<double> compute, communication;
};

// The unit `items` (one forward, one backward and maybe its weight-gradient
// pass) of a stage whose passes run as `chunks` chunks, the `overlapped`
// dimensions' collectives beside the other pass's compute.
UnitPass OverlapUnit(const StageProgram& stage, const std::vector<ScheduleItem>& items, int64_t chunks,
                     const PassOverlap& overlapped);

// A unit that took `duration` shown as its items one after another: each
// item's span is its compute plus a share of the unit's time beyond the
// unit's compute, by its collectives' share (evenly when it has none).
std::vector<double> UnitSpans(const std::vector<double>& compute, const std::vector<double>& communication,
                              double duration);

// Throws std::invalid_argument when a stage's passes cannot run overlapped:
// weight gathers prefetched beside them (optimizer_level level3) or host
// copies of offloaded activations.
void CheckOverlappable(const StageProgram& stage);

}  // namespace shardlab
