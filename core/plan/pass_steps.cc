#include "core/plan/pass_steps.h"

#include <algorithm>
#include <limits>

namespace shardlab {

double PassStep::CommunicationSeconds(const std::vector<Task>& tasks) const {
  double seconds = 0;
  for (int c : collectives) seconds += tasks[c].seconds;
  return seconds;
}

double PassStep::PrefetchSeconds(const std::vector<Task>& tasks) const {
  double seconds = 0;
  for (int p : prefetches) seconds += tasks[p].seconds;
  return seconds;
}

double PassStep::ClosedFormSeconds(const std::vector<Task>& tasks) const {
  return std::max(ComputeEndSeconds(tasks), CommunicationSeconds(tasks));
}

double PassStep::ComputeDoneSeconds(const std::vector<Task>& tasks, double work) const {
  if (work <= 0) return 0;
  // The two side streams as (end, share) runs from the step's start.
  struct Stream {
    const std::vector<int>& list;
    size_t next = 0;
    double end = 0;
  };
  Stream streams[2] = {{collectives}, {prefetches}};
  for (Stream& s : streams)
    if (!s.list.empty()) s.end = tasks[s.list[0]].seconds;
  double t = 0;
  while (true) {
    double share = 0, until = std::numeric_limits<double>::infinity();
    for (const Stream& s : streams)
      if (s.next < s.list.size()) {
        share += tasks[s.list[s.next]].compute_share;
        until = std::min(until, s.end);
      }
    const double rate = std::max(0.0, 1 - share);
    if (until == std::numeric_limits<double>::infinity() || work <= (until - t) * rate) return t + work / rate;
    work -= (until - t) * rate;
    t = until;
    for (Stream& s : streams)
      if (s.next < s.list.size() && s.end <= t && ++s.next < s.list.size()) s.end = t + tasks[s.list[s.next]].seconds;
  }
}

double PassStep::TaskDoneSeconds(const std::vector<Task>& tasks, int task) const {
  for (const auto& [t, work] : compute_through)
    if (t == task) return ComputeDoneSeconds(tasks, work);
  return ClosedFormSeconds(tasks);
}

double CopyStream::Start(const PassStep& step, double now) {
  const double wait = step.waits_for_copies ? std::max(0.0, busy_until - now) : 0.0;
  if (step.copy_seconds > 0) busy_until = std::max(busy_until, now + wait) + step.copy_seconds;
  return wait;
}

void PrefetchStream::Issue(const PassStep& step, const std::vector<Task>& tasks, double now) {
  for (int p : step.prefetches) ends.push_back(std::max(ends.empty() ? now : ends.back(), now) + tasks[p].seconds);
}

double PrefetchStream::Wait(const PassStep& step, double now) const {
  if (step.prefetches_needed <= 0) return 0;
  return std::max(0.0, ends.at(static_cast<size_t>(step.prefetches_needed) - 1) - now);
}

std::vector<PassStep> PassSteps(const std::vector<Task>& tasks, size_t begin, size_t end) {
  std::vector<PassStep> steps;
  // Whether the last step still takes compute tasks: a compute run, or an
  // overlapped collective (or host copy) waiting for the compute beside it.
  bool open_for_compute = false;
  // prefetches_needed counts from the start of the task list: a range that
  // starts later (a virtual pipeline chunk) has issued none of those before
  // it, which an earlier range ran and waited for at its end.
  int issued_before = 0;
  for (size_t i = 0; i < begin; ++i) issued_before += tasks[i].prefetch;
  for (size_t i = begin; i < end; ++i) {
    const Task& t = tasks[i];
    const int index = static_cast<int>(i);
    if (t.after_host_copies) open_for_compute = false;
    if (t.prefetch) {
      // A prefetch starts a step, or joins one still waiting for compute.
      const bool joins = !steps.empty() && open_for_compute && steps.back().compute_seconds == 0;
      if (!joins) steps.push_back({index, index, 0, {}});
      steps.back().prefetches.push_back(index);
      steps.back().end_task = index + 1;
      open_for_compute = true;
      continue;
    }
    if (const int needed = t.prefetches_needed - issued_before; needed > 0) {
      // A task that waits for prefetches starts a step, or joins one still
      // waiting for compute (prefetches just issued, an overlapped
      // collective): the step then starts once they have ended.
      const bool joins =
          !steps.empty() && open_for_compute && steps.back().compute_seconds == 0 && steps.back().copy_seconds == 0;
      if (!joins) steps.push_back({index, index, 0, {}});
      steps.back().prefetches_needed = std::max(steps.back().prefetches_needed, needed);
      steps.back().end_task = index + 1;
      open_for_compute = true;
    }
    if (t.pcie_copy && t.overlapped) {
      // A copy starts a step, or joins one still waiting for compute (an
      // overlapped collective's, or another copy's).
      const bool joins = !steps.empty() && open_for_compute && steps.back().compute_seconds == 0;
      if (!joins) steps.push_back({index, index, 0, {}});
      steps.back().waits_for_copies |= t.after_host_copies;
      steps.back().copy_seconds += t.seconds;
      steps.back().end_task = index + 1;
      open_for_compute = true;
      continue;
    }
    if (t.kind == Task::Kind::kCompute) {
      if (!open_for_compute) steps.push_back({index, index, 0, {}});
      steps.back().compute_seconds += t.seconds;
      steps.back().compute_through.emplace_back(index, steps.back().compute_seconds);
      steps.back().end_task = index + 1;
      steps.back().waits_for_copies |= t.after_host_copies;
      open_for_compute = true;
      continue;
    }
    // A collective after an overlapped one (with no compute between) joins it on the communication stream.
    const bool joins = t.overlapped && !t.after_host_copies && !steps.empty() && !steps.back().collectives.empty() &&
                       steps.back().compute_seconds == 0 && tasks[steps.back().collectives.back()].overlapped;
    if (!joins) steps.push_back({index, index, 0, {}});
    steps.back().waits_for_copies |= t.after_host_copies;
    steps.back().collectives.push_back(index);
    steps.back().end_task = index + 1;
    open_for_compute = t.overlapped;
  }
  return steps;
}

std::pair<size_t, size_t> ChunkTaskRange(const std::vector<Task>& tasks, int64_t chunks, int64_t chunk, bool reversed) {
  const auto copy = [](const Task& t) { return t.mirror_copy; };
  if (std::any_of(tasks.begin(), tasks.end(), copy)) {
    // dualpipe: chunk 1 is the mirrored copy's run of tasks, chunk 0 the rest.
    const bool of_copy = chunk == 1;
    const auto first =
        std::find_if(tasks.begin(), tasks.end(), [&](const Task& t) { return t.mirror_copy == of_copy; });
    const auto end = std::find_if(first, tasks.end(), [&](const Task& t) { return t.mirror_copy != of_copy; });
    return {static_cast<size_t>(first - tasks.begin()), static_cast<size_t>(end - tasks.begin())};
  }
  const auto n = static_cast<int64_t>(tasks.size());
  const int64_t share = reversed ? chunks - 1 - chunk : chunk;
  return {static_cast<size_t>(n * share / chunks), static_cast<size_t>(n * (share + 1) / chunks)};
}

std::vector<PassStep> ChunkSteps(const std::vector<Task>& tasks, int64_t chunks, int64_t chunk, bool reversed) {
  const auto [begin, end] = ChunkTaskRange(tasks, chunks, chunk, reversed);
  return PassSteps(tasks, begin, end);
}

std::vector<int64_t> ChunkOfEachTask(const std::vector<Task>& tasks, int64_t chunks, bool reversed) {
  std::vector<int64_t> chunk(tasks.size(), 0);
  for (int64_t c = 0; c < chunks; ++c) {
    const auto [begin, end] = ChunkTaskRange(tasks, chunks, c, reversed);
    for (size_t i = begin; i < end; ++i) chunk[i] = c;
  }
  return chunk;
}

int64_t ChunkOfTask(int64_t tasks, int64_t chunks, int64_t task) {
  int64_t chunk = 0;
  while (chunk + 1 < chunks && task >= tasks * (chunk + 1) / chunks) ++chunk;
  return chunk;
}

std::vector<bool> BucketReadyTasks(const StageProgram& stage) {
  std::vector<bool> ready(stage.GradientTasks().size(), false);
  for (const GradientBucket& b : stage.buckets)
    if (b.ready_after >= 0) ready[b.ready_after] = true;
  return ready;
}

}  // namespace shardlab
