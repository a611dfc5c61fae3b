#include "core/analytical/analytical_engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "core/plan/overlapped_unit.h"
#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"

namespace shardlab {
namespace {

// One micro-batch's pass (all chunks): its duration, the compute stream's
// work and the collectives inside it.
struct PassTime {
  double duration = 0, compute = 0, communication = 0;
  std::vector<double> task_end;  // offset in the pass after which each task is done
};

PassTime Sum(const std::vector<Task>& tasks, const std::vector<bool>& breaks) {
  PassTime t;
  t.task_end.assign(tasks.size(), 0);
  t.duration =
      ClosedFormPass(PassSteps(tasks, 0, tasks.size(), breaks), tasks, [&](const PassStep& step, double end, double) {
        t.compute += step.compute_seconds;
        t.communication += step.CommunicationSeconds(tasks) + step.PrefetchSeconds(tasks);
        for (int i = step.first_task; i < step.end_task; ++i) t.task_end[i] = end;
      });
  return t;
}

// A stage's forward, backward and (split backward) weight-gradient passes.
struct StagePasses {
  PassTime forward, backward, weight_gradient;
  const PassTime& Of(const ScheduleItem& item) const {
    return item.forward ? forward : item.weight_gradient ? weight_gradient : backward;
  }
  // The pass that completes the gradients (StageProgram::GradientTasks).
  const PassTime& gradients(const StageProgram& stage) const {
    return stage.splits_backward ? weight_gradient : backward;
  }
};

StagePasses Sum(const StageProgram& stage) {
  StagePasses t;
  t.forward = Sum(stage.forward, {});
  t.backward = Sum(stage.backward, BackwardPassBreaks(stage, false));
  t.weight_gradient = Sum(stage.weight_gradient, BackwardPassBreaks(stage, true));
  return t;
}

}  // namespace

Trace RunAnalytical(const Plan& plan) {
  CheckTaskRuns(plan, kMaxAnalyticalTaskRuns, "analytical", "about 1 GiB of memory and 3 s");
  const auto wall_start = std::chrono::steady_clock::now();
  Trace trace;
  trace.engine = "analytical";
  std::vector<TraceEvent>& events = trace.events;
  const int64_t S = static_cast<int64_t>(plan.stages.size());
  const int64_t M = plan.micro_batches;
  const int64_t V = RunsChunks(plan.schedule) ? plan.chunks : 1;
  std::vector<StagePasses> times;
  for (const auto& stage : plan.stages) times.push_back(Sum(stage));

  // Step start: parallel-optimizer weight gathers.
  std::vector<double> start(S, 0);
  for (int64_t s = 0; s < S; ++s) {
    double at = 0;
    for (const Task& t : plan.stages[s].step_start) {
      events.push_back(MakeEvent(s, Lane::kCommunication, EventKind::kWeightGather, t.name, at, t.seconds));
      at += t.seconds;
    }
    start[s] = plan.stages[s].FirstForwardStart();
  }

  // Pipeline passes: list scheduling of each stage's order under the
  // neighbour dependencies, a unit of overlapped passes as one. Keys:
  // (forward, virtual stage, micro-batch).
  std::map<std::tuple<bool, int64_t, int64_t>, double> done;
  std::vector<std::vector<ScheduleItem>> order(S);
  for (int64_t s = 0; s < S; ++s) order[s] = StageOrder(plan, s);
  std::vector<size_t> next(S, 0);
  std::vector<double> free_at = start, last_end(S, 0);
  // Per micro-batch (all chunks): when the pass that completes its gradients
  // ends, and whether it ran in a unit (its buckets then ready at the end).
  std::vector<std::vector<double>> gradients_end(S, std::vector<double>(M, 0));
  std::vector<std::vector<char>> gradients_in_unit(S, std::vector<char>(M, 0));
  // Units by their items' (forward, weight gradient, chunk), per stage: the
  // merged pass and its closed-form duration.
  using UnitKey = std::vector<std::tuple<bool, bool, int64_t>>;
  std::vector<std::map<UnitKey, std::pair<UnitPass, double>>> units(S);
  std::vector<std::vector<Task>> unit_tasks(S);
  if (!plan.overlap_forward_backward.empty())
    for (int64_t s = 0; s < S; ++s) unit_tasks[s] = UnitTasks(plan.stages[s]);
  const int64_t virtual_stages = S * V;
  // The transfer between virtual stages v and v + 1: the activation v's stage
  // sends (or its gradient back); none where both run on one stage (the V's turn).
  auto boundary_seconds = [&](int64_t v) {
    const int64_t from = StageOfVirtual(plan.schedule, v, S);
    return from == StageOfVirtual(plan.schedule, v + 1, S) ? 0.0 : plan.stages[from].send_seconds;
  };
  // An item's pass on the timeline, over [begin, begin + duration), and its output leaving at `end`.
  auto run_item = [&](int64_t s, const ScheduleItem& item, double begin, double duration, double compute,
                      double communication, double end) {
    const int64_t vs = VirtualStage(plan.schedule, item.chunk, s, S);
    if (item.Exchanges()) done[{item.forward, vs, item.micro_batch}] = end;
    TraceEvent pass = MakeEvent(s, Lane::kCompute, PassKind(item), PassName(item, V), begin, duration);
    pass.micro_batch = item.micro_batch;
    pass.chunk = item.chunk;
    pass.compute = compute;
    pass.communication = communication;
    events.push_back(pass);
    // The activation (or its gradient) leaves for the neighbouring virtual stage.
    const int64_t target = item.forward ? vs + 1 : vs - 1;
    if (item.Exchanges() && (plan.training || item.forward) && target >= 0 && target < virtual_stages &&
        StageOfVirtual(plan.schedule, target, S) != s) {
      const double seconds = boundary_seconds(std::min(vs, target));
      TraceEvent send =
          MakeEvent(s, Lane::kPipeline, EventKind::kSend,
                    std::string("send ") + (item.forward ? "F" : "B") + std::to_string(item.micro_batch), end, seconds);
      send.micro_batch = item.micro_batch;
      send.chunk = item.chunk;
      events.push_back(send);
    }
  };
  size_t remaining = 0;
  for (const auto& o : order) remaining += o.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t s = 0; s < S; ++s) {
      while (next[s] < order[s].size()) {
        const size_t first = next[s], last = UnitEnd(order[s], first);
        double ready = free_at[s];
        // Forward needs the previous virtual stage's forward; backward the next one's backward and its own forward.
        auto wait_for = [&](bool forward, int64_t v, int64_t m, double transfer) {
          auto it = done.find({forward, v, m});
          if (it == done.end()) return false;
          ready = std::max(ready, it->second + transfer);
          return true;
        };
        bool ok = true;
        for (size_t k = first; ok && k < last; ++k) {
          const ScheduleItem& item = order[s][k];
          const int64_t vs = VirtualStage(plan.schedule, item.chunk, s, S);
          if (item.forward) {
            if (vs > 0) ok = wait_for(true, vs - 1, item.micro_batch, boundary_seconds(vs - 1));
          } else if (!item.weight_gradient) {  // a weight-gradient pass follows its own backward in the order
            ok = wait_for(true, vs, item.micro_batch, 0);
            if (ok && vs + 1 < virtual_stages) ok = wait_for(false, vs + 1, item.micro_batch, boundary_seconds(vs));
          }
        }
        if (!ok) break;
        double end = ready;
        if (last - first == 1) {
          const ScheduleItem& item = order[s][first];
          const double share = 1.0 / static_cast<double>(V);
          const PassTime& pass_time = times[s].Of(item);
          const double duration = pass_time.duration * share;
          end = ready + duration;
          run_item(s, item, ready, duration, pass_time.compute * share, pass_time.communication * share, end);
        } else {
          const std::vector<ScheduleItem> items(order[s].begin() + static_cast<std::ptrdiff_t>(first),
                                                order[s].begin() + static_cast<std::ptrdiff_t>(last));
          UnitKey key;
          for (const ScheduleItem& i : items) key.emplace_back(i.forward, i.weight_gradient, i.chunk);
          auto it = units[s].find(key);
          if (it == units[s].end()) {
            UnitPass unit = OverlapUnit(plan.stages[s], items, V, plan.overlap_forward_backward);
            const double duration = ClosedFormPass(unit.steps, unit_tasks[s], [](const PassStep&, double, double) {});
            it = units[s].emplace(key, std::make_pair(std::move(unit), duration)).first;
          }
          const auto& [unit, duration] = it->second;
          end = ready + duration;
          const std::vector<double> spans = UnitSpans(unit.compute, unit.communication, duration);
          double at = ready;
          for (size_t k = 0; k < items.size(); ++k) {
            run_item(s, items[k], at, spans[k], unit.compute[k], unit.communication[k], end);
            at += spans[k];
          }
        }
        free_at[s] = last_end[s] = end;
        for (size_t k = first; k < last; ++k) {
          const ScheduleItem& item = order[s][k];
          // The micro-batch's last gradient pass says how its buckets become ready.
          if (plan.stages[s].CompletesGradients(item) && end >= gradients_end[s][item.micro_batch]) {
            gradients_end[s][item.micro_batch] = end;
            gradients_in_unit[s][item.micro_batch] = last - first > 1;
          }
        }
        remaining -= last - first;
        next[s] = last;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocked");
  }

  for (int64_t s = 0; s < S; ++s) {
    const StageProgram& stage = plan.stages[s];
    // Gradient buckets on the communication stream, as each micro-batch's
    // backward produces their gradients: every bucket after the last
    // micro-batch, the every-micro-batch ones after the others too.
    double comm_free = last_end[s];
    const PassTime& gradients = times[s].gradients(stage);
    if (plan.training && !stage.buckets.empty()) {
      const std::vector<double>& task_end = gradients.task_end;
      std::vector<int64_t> micro_batches(M);
      for (int64_t m = 0; m < M; ++m) micro_batches[m] = m;
      std::stable_sort(micro_batches.begin(), micro_batches.end(),
                       [&](int64_t a, int64_t b) { return gradients_end[s][a] < gradients_end[s][b]; });
      comm_free = 0;
      for (size_t i = 0; i < micro_batches.size(); ++i) {
        const int64_t m = micro_batches[i];
        const bool last = i + 1 == micro_batches.size();
        for (size_t b = 0; b < stage.buckets.size(); ++b) {
          const GradientBucket& bucket = stage.buckets[b];
          if (!last && !bucket.every_micro_batch) continue;
          const double done_after = bucket.ready_after < 0 ? 0 : task_end[bucket.ready_after];
          // The last pass of micro-batch m ran the last 1/V of the gradient
          // pass; a bucket ready before that share was ready when it began.
          const double ready = gradients_in_unit[s][m]
                                   ? gradients_end[s][m]
                                   : gradients_end[s][m] - std::min(gradients.duration - done_after,
                                                                    gradients.duration / static_cast<double>(V));
          const double begin = std::max(ready, comm_free);
          comm_free = begin + bucket.seconds;
          TraceEvent e = MakeEvent(s, Lane::kCommunication, EventKind::kGradient, "gradients " + std::to_string(b),
                                   begin, bucket.seconds);
          if (bucket.every_micro_batch) e.micro_batch = m;
          events.push_back(std::move(e));
        }
      }
      comm_free = std::max(comm_free, last_end[s]);
    }
    double end = comm_free;
    for (const Task& task : stage.optimizer) {
      events.push_back(MakeEvent(s, Lane::kCompute, EventKind::kOptimizer, "optimizer", end, task.seconds));
      end += task.seconds;
    }
  }
  trace.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return trace;
}

}  // namespace shardlab
