// The data of the pipeline timeline, free of Qt: one row per stage with its
// compute passes, communication and pipeline transfers, and the bubbles Summarize found (idle
// compute time from the end of the stage's step-start weight gathers to its
// last pass), with the bubble share per stage and overall as result.json
// reports them.
#pragma once

#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/report/step_result.h"

namespace shardlab::gui {

struct TimelineSpan {
  double start = 0, end = 0;
  std::string name;
  EventKind kind = EventKind::kForward;  // bubbles: unused
  int64_t micro_batch = -1;
  int64_t chunk = 0;      // interleaved pipelines: the virtual chunk of the stage this pass runs
  int64_t seq_chunk = 0;  // sequence pipelining: the chunk of its micro-batch's sequence

  bool IsPass() const {
    return kind == EventKind::kForward || kind == EventKind::kBackward || kind == EventKind::kWeightGradient;
  }
};

// A task inside a stage's forward or backward work, as a share of it: clicking
// a pass there selects its operator. With interleaved chunks a forward runs
// the chunk's share of that work ((chunk + x) / chunks of it at x of the
// pass), a backward the share as far from the end ((chunks - 1 - chunk + x) / chunks).
struct PassTask {
  int op = -1;
  std::string name;
  double begin = 0, end = 0;  // fractions of the pass
};

// One traced device (or lane of devices in lockstep) of a stage.
struct DeviceRow {
  std::string label;  // "ranks 0-3"
  std::vector<TimelineSpan> compute;
  std::vector<TimelineSpan> communication;
  std::vector<TimelineSpan> transfers;  // sends to the neighbouring stages
};

struct StageRow {
  int64_t stage = 0;
  std::vector<TimelineSpan> compute;  // the stage's first traced device
  std::vector<TimelineSpan> communication;
  std::vector<TimelineSpan> transfers;  // sends to the neighbouring stages
  std::vector<TimelineSpan> bubbles;
  double bubble_fraction = 0;      // of the step
  std::vector<DeviceRow> devices;  // every traced device, when the result has several per stage
  // Per sequence chunk (one list without sequence pipelining: a later chunk's
  // attention takes a larger share of its pass).
  std::vector<std::vector<PassTask>> forward_tasks, backward_tasks, weight_gradient_tasks;
  int64_t chunks = 1;  // virtual chunks a pass covers a share of
  // The task of `pass` at `x` (0..1) of its width, null for none.
  const PassTask* TaskAt(const TimelineSpan& pass, double x) const;
};

struct PipelineTimeline {
  std::vector<StageRow> stages;
  double step_seconds = 0;
  double bubble_fraction = 0;  // the slowest stage's, as result.json
};

// The timeline of a step result with events (one representative device per
// stage; results traced per device, like SimGrid's, also give device rows).
PipelineTimeline BuildTimeline(const StepResult& result);

// Where each operator's tasks sit inside a stage's forward and backward pass,
// from the plan's closed-form task times walked by the engines' pass steps.
void AttachPassTasks(const Plan& plan, PipelineTimeline* timeline);

}  // namespace shardlab::gui
