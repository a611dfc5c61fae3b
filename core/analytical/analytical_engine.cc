#include "core/analytical/analytical_engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"

namespace shardlab {
namespace {

struct PassTimes {
  double forward = 0;  // one micro-batch, all chunks
  double backward = 0;
  double compute = 0;                     // compute part of forward + backward
  double communication = 0;               // collectives inside the passes
  double exposed = 0;                     // the part of them the compute stream waits for
  std::vector<double> backward_task_end;  // offset in one backward pass after which each task is done
};

PassTimes Sum(const StageProgram& stage) {
  PassTimes t;
  auto add = [&t](const std::vector<Task>& tasks, double* duration, std::vector<double>* task_end,
                  const std::vector<bool>& breaks) {
    if (task_end) task_end->assign(tasks.size(), 0);
    for (const PassStep& step : PassSteps(tasks, 0, tasks.size(), breaks)) {
      const double seconds = step.ClosedFormSeconds(tasks);
      *duration += seconds;
      t.compute += step.compute_seconds;
      t.communication += step.CommunicationSeconds(tasks);
      t.exposed += seconds - step.compute_seconds;
      if (task_end)
        for (int i = step.first_task; i < step.end_task; ++i) (*task_end)[i] = *duration;
    }
  };
  add(stage.forward, &t.forward, nullptr, {});
  add(stage.backward, &t.backward, &t.backward_task_end, BucketBreaks(stage));
  return t;
}

}  // namespace

StepResult RunAnalytical(const Plan& plan, bool with_events) {
  const auto wall_start = std::chrono::steady_clock::now();
  StepResult result;
  result.engine = "analytical";
  const int64_t S = static_cast<int64_t>(plan.stages.size());
  const int64_t M = plan.micro_batches;
  const int64_t V = plan.schedule == "interleaved" ? plan.chunks : 1;
  std::vector<PassTimes> times;
  for (const auto& stage : plan.stages) times.push_back(Sum(stage));

  // Step start: parallel-optimizer weight gathers.
  std::vector<double> start(S, 0);
  for (int64_t s = 0; s < S; ++s)
    for (const Task& t : plan.stages[s].step_start) {
      if (with_events)
        result.events.push_back({s, "communication", t.name, "weight_gather", -1, 0, start[s], t.seconds, {}});
      start[s] += t.seconds;
    }

  // Pipeline passes: list scheduling of each stage's order under the
  // neighbour dependencies. Keys: (forward, virtual stage, micro-batch).
  std::map<std::tuple<bool, int64_t, int64_t>, double> done;
  std::vector<std::vector<ScheduleItem>> order(S);
  for (int64_t s = 0; s < S; ++s)
    order[s] = plan.training ? StageSchedule(plan.schedule, s, S, M, V) : StageSchedule("gpipe", s, S, M, V);
  if (!plan.training)
    for (auto& o : order)
      o.erase(std::remove_if(o.begin(), o.end(), [](const ScheduleItem& i) { return !i.forward; }), o.end());
  std::vector<size_t> next(S, 0);
  std::vector<double> free_at = start, first_start(S, -1), last_end(S, 0);
  const int64_t virtual_stages = S * V;
  size_t remaining = 0;
  for (const auto& o : order) remaining += o.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t s = 0; s < S; ++s) {
      while (next[s] < order[s].size()) {
        const ScheduleItem& item = order[s][next[s]];
        const int64_t vs = item.chunk * S + s;
        double ready = free_at[s];
        // Forward needs the previous virtual stage's forward; backward the next one's backward and its own forward.
        auto wait_for = [&](bool forward, int64_t v, int64_t m, double transfer) {
          auto it = done.find({forward, v, m});
          if (it == done.end()) return false;
          ready = std::max(ready, it->second + transfer);
          return true;
        };
        const int64_t prev_stage = (s + S - 1) % S;
        bool ok = true;
        if (item.forward) {
          if (vs > 0) ok = wait_for(true, vs - 1, item.micro_batch, plan.stages[prev_stage].send_seconds);
        } else {
          ok = wait_for(true, vs, item.micro_batch, 0);
          if (ok && vs + 1 < virtual_stages)
            ok = wait_for(false, vs + 1, item.micro_batch, plan.stages[s].send_seconds);
        }
        if (!ok) break;
        const double duration = (item.forward ? times[s].forward : times[s].backward) / static_cast<double>(V);
        done[{item.forward, vs, item.micro_batch}] = ready + duration;
        if (first_start[s] < 0) first_start[s] = ready;
        free_at[s] = ready + duration;
        last_end[s] = free_at[s];
        if (with_events)
          result.events.push_back({s,
                                   "compute",
                                   (item.forward ? "F" : "B") + std::to_string(item.micro_batch) +
                                       (V > 1 ? "." + std::to_string(item.chunk) : ""),
                                   item.forward ? "forward" : "backward",
                                   item.micro_batch,
                                   item.chunk,
                                   ready,
                                   duration,
                                   {}});
        ++next[s];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocked");
  }

  for (int64_t s = 0; s < S; ++s) {
    const StageProgram& stage = plan.stages[s];
    StageResult r;
    r.stage = s;
    r.forward_seconds = times[s].forward;
    r.backward_seconds = times[s].backward;
    r.memory = stage.memory;
    const double passes = static_cast<double>(M);
    r.compute_seconds = passes * times[s].compute;
    r.communication_seconds = passes * times[s].communication;
    r.exposed_communication_seconds = passes * times[s].exposed + start[s];
    for (const Task& t : stage.step_start) r.communication_seconds += t.seconds;
    // Point-to-point transfers overlap the other stages' work; what they cost
    // this stage shows up as waiting, counted in the bubble.
    r.communication_seconds += passes * (stage.send_seconds + (s > 0 ? plan.stages[s - 1].send_seconds : 0));

    // Gradient buckets on the communication stream, from the last backward on.
    double comm_free = last_end[s];
    const double backward = times[s].backward;
    if (plan.training && !stage.buckets.empty()) {
      const std::vector<double>& task_end = times[s].backward_task_end;
      comm_free = 0;
      for (size_t b = 0; b < stage.buckets.size(); ++b) {
        const GradientBucket& bucket = stage.buckets[b];
        const double ready = last_end[s] - (backward - task_end[bucket.ready_after]) / static_cast<double>(V);
        const double begin = std::max(ready, comm_free);
        comm_free = begin + bucket.seconds;
        r.communication_seconds += bucket.seconds;
        if (with_events)
          result.events.push_back(
              {s, "communication", "gradients " + std::to_string(b), "gradient", -1, 0, begin, bucket.seconds, {}});
      }
      comm_free = std::max(comm_free, last_end[s]);
      r.exposed_communication_seconds += comm_free - last_end[s];
    }
    double end = comm_free;
    for (const Task& task : stage.optimizer) {
      r.compute_seconds += task.seconds;
      if (with_events) result.events.push_back({s, "compute", "optimizer", "optimizer", -1, 0, end, task.seconds, {}});
      end += task.seconds;
    }
    r.passes_end_seconds = last_end[s];
    r.end_seconds = end;
    const double span = last_end[s] - start[s];
    r.bubble_seconds = std::max(0.0, span - passes * (times[s].forward + times[s].backward));
    result.stages.push_back(r);
  }
  Finalize(plan, result);
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace shardlab
