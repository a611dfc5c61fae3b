#include "gui/pipeline_timeline.h"

#include <algorithm>
#include <map>

#include "core/plan/pass_steps.h"
#include "core/plan/stage_passes.h"

namespace shardlab::gui {

PipelineTimeline BuildTimeline(const StepResult& result) {
  PipelineTimeline t;
  t.step_seconds = result.step_seconds;
  t.bubble_fraction = result.bubble_fraction;
  std::map<int64_t, StageRow> rows;
  for (const StageResult& s : result.stages) {
    StageRow& row = rows[s.stage];
    row.stage = s.stage;
    row.bubble_fraction = result.step_seconds > 0 ? s.bubble_seconds / result.step_seconds : 0;
    for (const Interval& b : s.bubbles) row.bubbles.push_back({b.start, b.end, "bubble", EventKind::kForward, -1});
  }
  // Events per stage and traced device; the stage row shows its first device.
  std::map<int64_t, std::map<std::vector<int64_t>, DeviceRow>> devices;
  for (const TraceEvent& e : result.events) {
    DeviceRow& d = devices[e.stage][e.ranks];
    TimelineSpan span{e.start, e.end(), e.name, e.kind, e.micro_batch, e.chunk, e.seq_chunk};
    (e.lane == Lane::kCompute         ? d.compute
     : e.lane == Lane::kCommunication ? d.communication
                                      : d.transfers)
        .push_back(span);
  }
  for (auto& [stage, by_ranks] : devices) {
    StageRow& row = rows[stage];
    row.stage = stage;
    row.compute = by_ranks.begin()->second.compute;
    row.communication = by_ranks.begin()->second.communication;
    row.transfers = by_ranks.begin()->second.transfers;
    if (by_ranks.size() < 2) continue;
    for (auto& [ranks, d] : by_ranks) {
      d.label = ranks.empty() ? "stage" : "rank " + std::to_string(ranks.front());
      if (ranks.size() > 1) d.label = "ranks " + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
      row.devices.push_back(std::move(d));
    }
  }
  auto by_start = [](const TimelineSpan& a, const TimelineSpan& b) { return a.start < b.start; };
  for (auto& [stage, row] : rows) {
    std::sort(row.compute.begin(), row.compute.end(), by_start);
    std::sort(row.communication.begin(), row.communication.end(), by_start);
    std::sort(row.transfers.begin(), row.transfers.end(), by_start);
    for (DeviceRow& d : row.devices) {
      std::sort(d.compute.begin(), d.compute.end(), by_start);
      std::sort(d.communication.begin(), d.communication.end(), by_start);
      std::sort(d.transfers.begin(), d.transfers.end(), by_start);
    }
    t.stages.push_back(std::move(row));
  }
  return t;
}

namespace {

// The tasks of one pass with their shares: compute runs in order, blocking
// collectives after them; an overlapped collective adds no time of its own
// unless it outlasts the compute beside it.
std::vector<PassTask> TasksOf(const Plan& plan, const std::vector<Task>& tasks) {
  std::vector<PassTask> out;
  double at = 0;
  PrefetchStream prefetches;  // weight gathers ahead of use: only the waits for them take the pass's time
  for (const PassStep& step : PassSteps(tasks, 0, tasks.size())) {
    prefetches.Issue(step, tasks, at);
    at += prefetches.Wait(step, at);
    const double begin = at;
    const bool overlapped = !step.collectives.empty() && tasks[step.collectives.front()].overlapped;
    for (int i = step.first_task; i < step.end_task; ++i) {
      const Task& t = tasks[i];
      if ((t.kind == Task::Kind::kCollective && overlapped) || t.prefetch) continue;
      out.push_back({plan.ModelOperator(t), t.name, at, at + t.seconds});
      at += t.seconds;
    }
    at = std::max(at, begin + step.ClosedFormSeconds(tasks));
  }
  at += prefetches.Drain(at);
  if (at > 0)
    for (PassTask& p : out) {
      p.begin /= at;
      p.end /= at;
    }
  return out;
}

}  // namespace

void AttachPassTasks(const Plan& plan, PipelineTimeline* timeline) {
  for (StageRow& row : timeline->stages) {
    if (row.stage < 0 || row.stage >= static_cast<int64_t>(plan.stages.size())) continue;
    const StageProgram& stage = plan.stages[row.stage];
    row.forward_tasks.clear();
    row.backward_tasks.clear();
    row.weight_gradient_tasks.clear();
    for (int64_t j = 0; j < std::max<int64_t>(plan.seq_chunks, 1); ++j) {
      row.forward_tasks.push_back(TasksOf(plan, SequenceChunkTasks(stage.forward, j)));
      row.backward_tasks.push_back(TasksOf(plan, SequenceChunkTasks(stage.backward, j)));
      row.weight_gradient_tasks.push_back(TasksOf(plan, SequenceChunkTasks(stage.weight_gradient, j)));
    }
    row.chunks = std::max<int64_t>(plan.chunks, 1);
  }
}

const PassTask* StageRow::TaskAt(const TimelineSpan& pass, double x) const {
  if (!pass.IsPass()) return nullptr;
  // A backward runs the stage's layers in reverse: chunk c is the c-th share of its tasks from the end.
  const int64_t chunk = std::clamp<int64_t>(pass.chunk, 0, chunks - 1);
  const int64_t share_index = pass.kind == EventKind::kForward ? chunk : chunks - 1 - chunk;
  const double share = (static_cast<double>(share_index) + x) / static_cast<double>(chunks);
  const auto& per_seq_chunk = pass.kind == EventKind::kForward    ? forward_tasks
                              : pass.kind == EventKind::kBackward ? backward_tasks
                                                                  : weight_gradient_tasks;
  if (per_seq_chunk.empty()) return nullptr;
  const auto j = static_cast<size_t>(std::clamp<int64_t>(pass.seq_chunk, 0, per_seq_chunk.size() - 1));
  for (const PassTask& t : per_seq_chunk[j])
    if (share >= t.begin && share < t.end) return &t;
  return nullptr;
}

}  // namespace shardlab::gui
