#include "core/plan/plan.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/plan/pass_steps.h"
#include "core/util/engine_limit_error.h"

namespace shardlab {
double StageProgram::FirstForwardStart() const {
  double end = 0, start = 0;
  for (const Task& gather : step_start) {
    end += gather.seconds;
    start = std::max(start, end - gather.lead_seconds);
  }
  return start;
}

double StageProgram::GatherContentionSeconds() const {
  const double start = FirstForwardStart();
  double begin = 0, held = 0;
  for (const Task& gather : step_start) {
    const double end = begin + gather.seconds;
    held += gather.compute_share * std::max(0.0, end - std::max(begin, start));
    begin = end;
  }
  return held;
}

bool StageProgram::GathersOverlapForward() const {
  return std::any_of(step_start.begin(), step_start.end(), [](const Task& t) { return t.lead_seconds > 0; });
}

void SplitWeightGradients(StageProgram& stage, const ClusterSpec& cluster, int64_t chunks) {
  stage.splits_backward = true;
  std::vector<Task> backward;
  // Per backward task: the weight-gradient tasks taken out of it and the ones before it.
  std::vector<int> split_through(stage.backward.size());
  // Per backward task left whole in the input-gradient pass: its index there (-1: split).
  std::vector<int> input_gradient_task(stage.backward.size(), -1);
  auto part = [&cluster](const Task& t, double fraction, GemmGradient gradient, const std::string& name) {
    Task p = t;
    p.name = name;
    p.flops = t.flops * fraction;
    p.bytes = t.bytes * fraction;
    p.kernel.gradient = gradient;
    p.weight_gradient_fraction = 0;
    p.prefetches_needed = 0;  // dB needs no weight: the W pass waits for no gather
    p.after_host_copies = false;
    p.seconds = ComputeSeconds(p.flops, p.bytes, p.dtype, cluster, p.on_host, p.kernel).seconds;
    return p;
  };
  bool waits_for_copies = false;  // a wait for host copies on a task that moved whole to the W pass
  for (size_t i = 0; i < stage.backward.size(); ++i) {
    const Task& t = stage.backward[i];
    if (t.kind != Task::Kind::kCompute || t.weight_gradient_fraction <= 0) {
      input_gradient_task[i] = static_cast<int>(backward.size());
      backward.push_back(t);
      backward.back().after_host_copies |= std::exchange(waits_for_copies, false);
    } else {
      const double fraction = t.weight_gradient_fraction;
      std::string name = t.name;
      if (const size_t slash = name.rfind("/backward"); slash != std::string::npos) name.resize(slash);
      stage.weight_gradient.push_back(part(t, fraction, GemmGradient::kSecond, name + "/weight_gradient"));
      if (fraction < 1) {
        backward.push_back(part(t, 1 - fraction, GemmGradient::kFirst, name + "/input_gradient"));
        backward.back().after_host_copies = t.after_host_copies || std::exchange(waits_for_copies, false);
      } else {
        waits_for_copies |= t.after_host_copies;
      }
    }
    split_through[i] = static_cast<int>(stage.weight_gradient.size());
  }
  stage.backward = std::move(backward);
  // A bucket is ready once the weight gradients up to its last one exist.
  // One whose last gradient came with the input-gradient pass (a norm scale,
  // a bias, an embedding) is ready once that pass has run, before the
  // weight-gradient pass of its chunk: after the weight-gradient task before
  // its own, or where that one lies in another chunk's share of the pass,
  // after the nearest task of its own chunk's share.
  const std::vector<int64_t> input_gradient_chunk = ChunkOfEachTask(stage.backward, chunks, true);
  for (GradientBucket& b : stage.buckets) {
    if (b.ready_after < 0) continue;
    const auto task = static_cast<size_t>(b.ready_after);
    int ready_after = split_through[task] - 1;
    if (chunks > 1 && input_gradient_task[task] >= 0) {
      const int64_t chunk = input_gradient_chunk[static_cast<size_t>(input_gradient_task[task])];
      const auto [begin, end] = ChunkTaskRange(stage.weight_gradient, chunks, chunk, true);
      if (begin < end) ready_after = std::clamp(ready_after, static_cast<int>(begin), static_cast<int>(end) - 1);
    }
    b.ready_after = ready_after;
  }
}

int64_t Plan::RepresentativeRank(int64_t stage) const {
  return focus_rank >= 0 && focus_rank < devices && placement.StageOf(focus_rank) == stage ? focus_rank
                                                                                           : Rank(stage, 0);
}

void CheckPlacement(const Plan& plan) {
  if (plan.placement.stages != static_cast<int64_t>(plan.stages.size()) ||
      plan.placement.devices_per_stage != plan.devices_per_stage)
    throw std::logic_error("the plan's rank placement does not describe its stages");
}

nlohmann::json ToJson(const MemoryBreakdown& m) {
  nlohmann::json j = {{"parameters", m.parameters},
                      {"gathered_weights", m.gathered_weights},
                      {"gradients", m.gradients},
                      {"optimizer_states", m.optimizer_states},
                      {"activations_per_micro_batch", m.activations_per_micro_batch},
                      {"micro_batches_in_flight", m.micro_batches_in_flight},
                      {"activations", m.activations},
                      {"communication_buffers", m.communication_buffers},
                      {"host", m.host},
                      {"peak", m.peak},
                      {"dominant", m.dominant},
                      {"dominant_bytes", m.dominant_bytes}};
  if (m.held_for_weight_gradients > 0)
    j["held_for_weight_gradients"] = m.held_for_weight_gradients;  // split backwards only
  return j;
}

std::vector<ScheduleItem> StageOrder(const Plan& plan, int64_t stage) {
  const auto stages = static_cast<int64_t>(plan.stages.size());
  const int64_t chunks = RunsChunks(plan.schedule) ? plan.chunks : 1;
  if (plan.training)
    return StageSchedule(plan.schedule, stage, stages, plan.micro_batch_num(), chunks,
                         !plan.overlap_forward_backward.empty(), plan.seq_chunks, plan.zbv_offset);
  std::vector<ScheduleItem> order =
      StageSchedule(PipelineSchedule::kGPipe, stage, stages, plan.micro_batches, chunks);  // each pass a micro-batch
  order.erase(std::remove_if(order.begin(), order.end(), [](const ScheduleItem& i) { return !i.forward; }),
              order.end());
  return order;
}

int64_t TaskRunsPerStep(const Plan& plan) {
  int64_t runs = 0;
  for (const StageProgram& stage : plan.stages)
    runs += static_cast<int64_t>(stage.forward.size() + stage.backward.size() + stage.weight_gradient.size()) *
            plan.micro_batches / plan.model_copies();
  return runs;
}

void CheckTaskRuns(const Plan& plan, int64_t limit, const std::string& engine, const std::string& cost) {
  const int64_t runs = TaskRunsPerStep(plan);
  if (runs <= limit) return;
  int64_t largest = 0;
  for (const StageProgram& stage : plan.stages)
    largest = std::max(
        largest, static_cast<int64_t>(stage.forward.size() + stage.backward.size() + stage.weight_gradient.size()) /
                     plan.model_copies());
  throw EngineLimitError(fmt::format(
      "this step would run {} tasks ({} stage{} x {} x up to {} tasks each), more than the {} engine's limit of {} "
      "({}): lower micro_batch_num{} or the model's size",
      runs, plan.stages.size(), plan.stages.size() == 1 ? "" : "s",
      plan.seq_chunks > 1 ? fmt::format("{} passes ({} micro-batches of {} sequence chunks)", plan.micro_batches,
                                        plan.micro_batch_num(), plan.seq_chunks)
                          : fmt::format("{} micro-batch{}", plan.micro_batches, plan.micro_batches == 1 ? "" : "es"),
      largest, engine, limit, cost, plan.seq_chunks > 1 ? ", seq_split_num" : ""));
}

}  // namespace shardlab
