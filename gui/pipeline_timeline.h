// The data of the pipeline timeline, free of Qt: one row per stage with its
// compute passes and communication, and the bubbles (idle compute time from
// the end of the stage's step-start weight gathers to its last pass: the
// wait while the pipeline fills and the gaps between passes), with the
// bubble share per stage and overall as result.json reports them.
#pragma once

#include <string>
#include <vector>

#include "core/report/step_result.h"

namespace shardlab::gui {

struct TimelineSpan {
  double start = 0, end = 0;
  std::string name;
  std::string category;  // forward, backward, gradient, optimizer, bubble, ...
  int64_t micro_batch = -1;
};

struct StageRow {
  int64_t stage = 0;
  std::vector<TimelineSpan> compute;
  std::vector<TimelineSpan> communication;
  std::vector<TimelineSpan> bubbles;
  double bubble_fraction = 0;  // of the step
};

struct PipelineTimeline {
  std::vector<StageRow> stages;
  double step_seconds = 0;
  double bubble_fraction = 0;  // the slowest stage's, as result.json
};

// The timeline of a step result with events (one representative device per stage).
PipelineTimeline BuildTimeline(const StepResult& result);

}  // namespace shardlab::gui
