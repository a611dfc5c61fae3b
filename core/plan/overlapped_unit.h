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

// Merges two passes' steps into one sequence: where one pass's next step is
// a blocking collective and the other's a compute run, they become one step
// (the collective on the communication stream beside the compute); otherwise
// the pass whose next step is followed by a collective goes first, so that
// its collective meets the other's compute. Each pass keeps its own order.
std::vector<PassStep> OverlapSteps(const std::vector<PassStep>& a, const std::vector<PassStep>& b);

struct UnitPass {
  std::vector<PassStep> steps;  // over UnitTasks
  // Per item of the unit: its own compute and collectives, in closed form.
  std::vector<double> compute, communication;
};

// The unit `items` (one forward, one backward and maybe its weight-gradient
// pass) of a stage whose passes run as `chunks` chunks.
UnitPass OverlapUnit(const StageProgram& stage, const std::vector<ScheduleItem>& items, int64_t chunks);

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
