#include "gui/pipeline_timeline.h"

#include <algorithm>
#include <map>

namespace shardlab::gui {

PipelineTimeline BuildTimeline(const StepResult& result) {
  PipelineTimeline t;
  t.step_seconds = result.step_seconds;
  t.bubble_fraction = result.bubble_fraction;
  std::map<int64_t, StageRow> rows;
  for (const StageResult& s : result.stages) {
    rows[s.stage].stage = s.stage;
    rows[s.stage].bubble_fraction = result.step_seconds > 0 ? s.bubble_seconds / result.step_seconds : 0;
  }
  for (const TimelineEvent& e : result.events) {
    StageRow& row = rows[e.stage];
    row.stage = e.stage;
    TimelineSpan span{e.start, e.start + e.duration, e.name, e.category, e.micro_batch};
    (e.lane == "compute" ? row.compute : row.communication).push_back(span);
  }
  auto is_pass = [](const TimelineSpan& s) { return s.category == "forward" || s.category == "backward"; };
  auto by_start = [](const TimelineSpan& a, const TimelineSpan& b) { return a.start < b.start; };
  for (auto& [stage, row] : rows) {
    std::sort(row.compute.begin(), row.compute.end(), by_start);
    std::sort(row.communication.begin(), row.communication.end(), by_start);
    // Bubbles: from the end of the step-start weight gathers (the parallel
    // optimizer's), the wait for the first pass, then the gaps between passes.
    double last_end = 0;
    for (const TimelineSpan& s : row.communication)
      if (s.category == "weight_gather") last_end = std::max(last_end, s.end);
    for (const TimelineSpan& s : row.compute) {
      if (!is_pass(s)) continue;
      if (s.start > last_end + 1e-12) row.bubbles.push_back({last_end, s.start, "bubble", "bubble", -1});
      last_end = std::max(last_end, s.end);
    }
    t.stages.push_back(std::move(row));
  }
  return t;
}

}  // namespace shardlab::gui
