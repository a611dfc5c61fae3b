#include "core/analytical/analytical_engine.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "core/plan/overlapped_unit.h"
#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"
#include "core/plan/stage_passes.h"

namespace shardlab {
namespace {

// One micro-batch's pass on one chunk in closed form: its duration, the
// compute stream's work and the collectives inside it.
struct PassTime {
  double duration = 0, compute = 0, communication = 0;
};

PassTime Time(const std::vector<PassStep>& steps, const std::vector<Task>& tasks) {
  PassTime t;
  t.duration = ClosedFormPass(steps, tasks, [&](const PassStep& step, double, double) {
    t.compute += step.ComputeEndSeconds(tasks);
    t.communication += step.CommunicationSeconds(tasks) + step.PrefetchSeconds(tasks);
  });
  return t;
}

// A stage's passes (StagePasses) and each kind's closed-form time per chunk.
struct StageTimes {
  StagePasses passes;
  int64_t seq_chunks;
  // By (forward, weight gradient, chunk, sequence chunk).
  std::map<std::tuple<bool, bool, int64_t, int64_t>, PassTime> times;

  StageTimes(const StageProgram& stage, int64_t chunks, int64_t seq_chunks, const PassOverlap& overlapped)
      : passes(stage, chunks, seq_chunks, overlapped), seq_chunks(seq_chunks) {}
  const PassTime& Of(const StageProgram& stage, const ScheduleItem& item) {
    auto [it, added] =
        times.try_emplace({item.forward, item.weight_gradient, item.chunk, item.micro_batch % seq_chunks});
    if (added) it->second = Time(passes.Steps(item), stage.PassTasks(item));
    return it->second;
  }
};

}  // namespace

Trace RunAnalytical(const Plan& plan) {
  CheckTaskRuns(plan, kMaxAnalyticalTaskRuns, "analytical", "about 1 GiB of memory and 3 s");
  const auto wall_start = std::chrono::steady_clock::now();
  Trace trace;
  trace.engine = "analytical";
  std::vector<TraceEvent>& events = trace.events;
  const int64_t S = static_cast<int64_t>(plan.stages.size());
  const int64_t V = RunsChunks(plan.schedule) ? plan.chunks : 1;
  std::vector<StageTimes> times;
  times.reserve(plan.stages.size());
  for (const auto& stage : plan.stages) times.emplace_back(stage, V, plan.seq_chunks, plan.overlap_forward_backward);

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
  std::vector<FinalGradientPasses> finals(S);
  // How much longer a chunk's final backward computes beside the buckets it
  // readies, per chunk: its last of the step, its other micro-batches'.
  std::vector<std::vector<double>> last_contention(S, std::vector<double>(V, 0)), other_contention = last_contention;
  for (int64_t s = 0; s < S; ++s) {
    order[s] = StageOrder(plan, s);
    finals[s] = FindFinalGradientPasses(plan, plan.stages[s], order[s]);
    for (int64_t c = 0; plan.training && c < V; ++c) {
      last_contention[s][c] = BucketContentionSeconds(plan.stages[s], V, true, c);
      other_contention[s][c] = BucketContentionSeconds(plan.stages[s], V, false, c);
    }
  }
  std::vector<size_t> next(S, 0);
  std::vector<double> free_at = start, last_end(S, 0);
  // Per micro-batch and chunk (m x V + c): when the chunk's last pass that
  // completes the micro-batch's gradients ends, and whether it ran in a unit
  // (its buckets then ready at the end).
  const auto key = [V](int64_t m, int64_t c) { return static_cast<size_t>(m * V + c); };
  std::vector<std::vector<double>> gradients_end(S, std::vector<double>(key(plan.micro_batch_num(), 0), -1));
  std::vector<std::vector<char>> gradients_in_unit(S, std::vector<char>(key(plan.micro_batch_num(), 0), 0));
  // The transfer between virtual stages v and v + 1: the activation v's stage
  // sends (or its gradient back); none where both run on one stage (the V's turn).
  auto boundary_seconds = [&](int64_t v) {
    const int64_t from = StageOfVirtual(plan.schedule, v, S);
    return from == StageOfVirtual(plan.schedule, v + 1, S) ? 0.0 : plan.stages[from].send_seconds;
  };
  // An item's pass on the timeline, over [begin, begin + duration), and its
  // output leaving at `end`; returns how long its send takes (0: none).
  auto run_item = [&](int64_t s, const ScheduleItem& item, double begin, double duration, double compute,
                      double communication, double end) -> double {
    const int64_t vs = VirtualStage(plan.schedule, item.chunk, s, S);
    if (item.Exchanges()) done[{item.forward, vs, item.micro_batch}] = end;
    TraceEvent pass = MakeEvent(s, Lane::kCompute, PassKind(item), PassName(item, V, plan.seq_chunks), begin, duration);
    pass.micro_batch = plan.MicroBatchOf(item);
    pass.seq_chunk = plan.SeqChunkOf(item);
    pass.chunk = item.chunk;
    pass.compute = compute;
    pass.communication = communication;
    events.push_back(pass);
    // The activation (or its gradient) leaves for the neighbouring virtual stage.
    const std::optional<int64_t> target = AdjacentVirtualStage(plan.schedule, item.forward, vs, S, V);
    if (item.Exchanges() && (plan.training || item.forward) && target &&
        StageOfVirtual(plan.schedule, *target, S) != s) {
      const double seconds = boundary_seconds(std::min(vs, *target));
      TraceEvent send =
          MakeEvent(s, Lane::kPipeline, EventKind::kSend, "send " + PassName(item, 1, plan.seq_chunks), end, seconds);
      send.micro_batch = plan.MicroBatchOf(item);
      send.seq_chunk = plan.SeqChunkOf(item);
      send.chunk = item.chunk;
      events.push_back(send);
      return seconds;
    }
    return 0.0;
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
          const std::optional<int64_t> input = AdjacentVirtualStage(plan.schedule, !item.forward, vs, S, V);
          if (item.forward) {
            if (input) ok = wait_for(true, *input, item.micro_batch, boundary_seconds(*input));
          } else if (!item.weight_gradient) {  // a weight-gradient pass follows its own backward in the order
            ok = wait_for(true, vs, item.micro_batch, 0);
            if (ok && input) ok = wait_for(false, *input, item.micro_batch, boundary_seconds(vs));
          }
        }
        if (!ok) break;
        double end = ready;
        double sends = 0;  // the sends the pass (or unit) starts as it ends
        // The compute the collectives beside the pass hold back: the step-start
        // gathers beside the first forward, the buckets beside a final backward.
        double contention = 0;
        if (last - first == 1) {
          const ScheduleItem& item = order[s][first];
          const PassTime& pass = times[s].Of(plan.stages[s], item);
          if (first == 0) contention += plan.stages[s].GatherContentionSeconds();
          if (plan.training && finals[s].is_final[first])
            contention += (finals[s].is_chunk_last[first] ? last_contention : other_contention)[s][item.chunk];
          end = ready + pass.duration + contention;
          sends =
              run_item(s, item, ready, pass.duration + contention, pass.compute + contention, pass.communication, end);
        } else {
          const std::vector<ScheduleItem> items(order[s].begin() + static_cast<std::ptrdiff_t>(first),
                                                order[s].begin() + static_cast<std::ptrdiff_t>(last));
          const UnitPass& unit = times[s].passes.Unit(items);
          end = ready + unit.seconds;
          const std::vector<double> spans = UnitSpans(unit.compute, unit.communication, unit.seconds);
          double at = ready;
          for (size_t k = 0; k < items.size(); ++k) {
            sends = std::max(sends, run_item(s, items[k], at, spans[k], unit.compute[k], unit.communication[k], end));
            at += spans[k];
          }
        }
        // Blocking sends hold the stage until they end (a unit's together, as
        // one batch of isend/irecv).
        free_at[s] = last_end[s] = end + (plan.stages[s].blocking_sends ? sends : 0.0);
        for (size_t k = first; k < last; ++k) {
          const ScheduleItem& item = order[s][k];
          // The micro-batch's last gradient pass says how its buckets become ready.
          const int64_t m = plan.MicroBatchOf(item);
          if (plan.stages[s].CompletesGradients(item) && end - contention >= gradients_end[s][key(m, item.chunk)]) {
            gradients_end[s][key(m, item.chunk)] = end - contention;
            gradients_in_unit[s][key(m, item.chunk)] = last - first > 1;
          }
        }
        remaining -= last - first;
        next[s] = last;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocked");
  }

  std::vector<double> gradients_done(S, 0);  // per stage: when its buckets are done
  for (int64_t s = 0; s < S; ++s) {
    const StageProgram& stage = plan.stages[s];
    // Gradient buckets on the communication stream, as each chunk's pass of
    // a micro-batch produces their gradients (BucketChunks): every bucket
    // after its chunk's last micro-batch, the every-micro-batch ones after
    // the others too; in the order the passes end, one after another.
    double comm_free = last_end[s];
    if (plan.training && !stage.buckets.empty()) {
      const std::vector<int64_t> chunk_of = BucketChunks(stage, V);
      std::vector<std::vector<double>> lead(static_cast<size_t>(V));  // per chunk, for its final pass
      for (size_t b = 0; b < stage.buckets.size(); ++b) {
        std::vector<double>& of_chunk = lead[static_cast<size_t>(chunk_of[b])];
        if (of_chunk.empty()) of_chunk = BucketLeadSeconds(stage, V, nullptr, chunk_of[b]);
      }
      std::vector<size_t> passes;  // (micro-batch, chunk) keys that completed gradients
      std::vector<size_t> chunk_last(static_cast<size_t>(V), gradients_end[s].size());  // none yet
      for (size_t k = 0; k < gradients_end[s].size(); ++k) {
        if (gradients_end[s][k] < 0) continue;
        passes.push_back(k);
        size_t& last = chunk_last[k % static_cast<size_t>(V)];
        if (last == gradients_end[s].size() || gradients_end[s][k] >= gradients_end[s][last]) last = k;
      }
      std::stable_sort(passes.begin(), passes.end(),
                       [&](size_t a, size_t b) { return gradients_end[s][a] < gradients_end[s][b]; });
      comm_free = 0;
      for (const size_t k : passes) {
        const int64_t m = static_cast<int64_t>(k) / V, c = static_cast<int64_t>(k) % V;
        const bool last = chunk_last[static_cast<size_t>(c)] == k;
        for (size_t b = 0; b < stage.buckets.size(); ++b) {
          const GradientBucket& bucket = stage.buckets[b];
          if (chunk_of[b] != c || (!last && !bucket.every_micro_batch)) continue;
          const double ready = gradients_end[s][k] - (gradients_in_unit[s][k] ? 0.0 : lead[static_cast<size_t>(c)][b]);
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
    gradients_done[s] = comm_free;
  }
  for (int64_t s = 0; s < S; ++s) {
    const StageProgram& stage = plan.stages[s];
    double end = gradients_done[s];
    if (plan.training && stage.mirror_gradient_bytes > 0) {
      // dualpipe: its gradients go to the mirror stage as that one's come
      // back, each leaving once its stage's buckets are done.
      const int64_t mirror = MirrorStage(s, S);
      const double received = std::max(end, gradients_done[mirror]) + stage.mirror_gradient_seconds;
      events.push_back(MakeEvent(s, Lane::kCommunication, EventKind::kGradient,
                                 "gradients with stage " + std::to_string(mirror), end, received - end));
      end = received;
    }
    for (const Task& task : stage.optimizer) {
      events.push_back(MakeEvent(s, Lane::kCompute, EventKind::kOptimizer, "optimizer", end, task.seconds));
      end += task.seconds;
    }
  }
  trace.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return trace;
}

}  // namespace shardlab
