#include "core/report/step_result.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config/units.h"
#include "core/plan/overlapped_unit.h"
#include "core/plan/pass_steps.h"
#include "core/plan/stage_passes.h"

namespace shardlab {

namespace {

using PerDimension = std::array<double, kCommDimensions>;

// A pass's collectives in closed form, per dimension: their busy time and
// the part of it not hidden behind the compute beside them.
struct PassComm {
  PerDimension seconds{}, exposed{};
};

// Prefetches (and a unit's collectives issued beside the other pass's
// steps) are exposed for as long as steps wait for them, shared out by their time.
PassComm ClosedFormStepsComm(const std::vector<PassStep>& steps, const std::vector<Task>& tasks) {
  PassComm c;
  PerDimension prefetch{};
  double waited = 0, drained = 0;
  ClosedFormPass(
      steps, tasks,
      [&](const PassStep& step, double, double wait) {
        waited += wait;
        for (int t : step.prefetches) prefetch[static_cast<size_t>(tasks[t].dimension)] += tasks[t].seconds;
        const double comm = step.CommunicationSeconds(tasks);
        if (comm <= 0) return;
        const bool overlapped = tasks[step.collectives.front()].overlapped;
        const double exposed = overlapped ? std::max(0.0, comm - step.ComputeEndSeconds(tasks)) : comm;
        for (int t : step.collectives) {
          const auto d = static_cast<size_t>(tasks[t].dimension);
          c.seconds[d] += tasks[t].seconds;
          c.exposed[d] += exposed * tasks[t].seconds / comm;
        }
      },
      &drained);
  double total = 0;
  for (double x : prefetch) total += x;
  for (size_t d = 0; d < prefetch.size(); ++d) {
    c.seconds[d] += prefetch[d];
    if (total > 0) c.exposed[d] += (waited + drained) * prefetch[d] / total;
  }
  return c;
}

// An item's pass: (kind, micro-batch, chunk) as its timeline event names it.
using PassKey = std::tuple<EventKind, int64_t, int64_t>;

PassKey KeyOf(const ScheduleItem& item) { return {PassKind(item), item.micro_batch, item.chunk}; }

// The collectives of each unit of overlapped passes (overlap_forward_backward)
// in closed form, by each of its items.
std::map<PassKey, PassComm> UnitComm(const Plan& plan, int64_t s, StagePasses& passes) {
  std::map<PassKey, PassComm> by_item;
  if (plan.overlap_forward_backward.empty()) return by_item;
  const std::vector<ScheduleItem> order = StageOrder(plan, s);
  std::map<const UnitPass*, PassComm> units;  // each kind of unit once
  for (size_t begin = 0; begin < order.size();) {
    const size_t end = UnitEnd(order, begin);
    if (end - begin > 1) {
      const std::vector<ScheduleItem> items(order.begin() + static_cast<std::ptrdiff_t>(begin),
                                            order.begin() + static_cast<std::ptrdiff_t>(end));
      const UnitPass& unit = passes.Unit(items);
      auto it = units.find(&unit);
      if (it == units.end()) it = units.emplace(&unit, ClosedFormStepsComm(unit.steps, passes.UnitTasks())).first;
      for (const ScheduleItem& i : items) by_item[KeyOf(i)] = it->second;
    }
    begin = end;
  }
  return by_item;
}

// Adds `amount` to `into` split as `weights` are, else as `fallback` is
// (all to the tensor dimension when both are all zero).
void ShareOut(double amount, const PerDimension& weights, const PerDimension& fallback, PerDimension& into) {
  for (const PerDimension* w : {&weights, &fallback}) {
    double total = 0;
    for (double x : *w) total += x;
    if (total <= 0) continue;
    for (size_t d = 0; d < w->size(); ++d) into[d] += amount * (*w)[d] / total;
    return;
  }
  into[static_cast<size_t>(CommDimension::kTensor)] += amount;
}

// The bytes each device puts on the wire per step, per dimension, from the stage's program.
PerDimension StepBytes(const Plan& plan, const StageProgram& program) {
  PerDimension bytes{};
  // Each micro-batch runs its passes on one of the stage's model copies.
  const double m = static_cast<double>(plan.micro_batches) / static_cast<double>(plan.model_copies());
  for (const auto* pass : {&program.forward, &program.backward, &program.weight_gradient})
    for (const Task& t : *pass)
      if (t.kind == Task::Kind::kCollective) bytes[static_cast<size_t>(t.dimension)] += m * t.comm_bytes;
  for (const Task& t : program.step_start) bytes[static_cast<size_t>(t.dimension)] += t.comm_bytes;
  for (const GradientBucket& b : program.buckets)
    bytes[static_cast<size_t>(CommDimension::kData)] +=
        b.every_micro_batch ? static_cast<double>(plan.micro_batch_num()) * b.bytes : b.bytes;
  bytes[static_cast<size_t>(CommDimension::kData)] += program.mirror_gradient_bytes;
  double& pipeline = bytes[static_cast<size_t>(CommDimension::kPipeline)];
  if (plan.schedule == PipelineSchedule::kDualPipe) {
    // Each direction's micro-batch sends its activation on unless the stage
    // ends that direction and its gradient back unless the stage starts it:
    // both on a middle stage, one at either end.
    const auto S = static_cast<int64_t>(plan.stages.size());
    const double boundary = std::max(program.send_forward_bytes, program.send_backward_bytes);
    const double ways = static_cast<double>((program.stage > 0) + (program.stage + 1 < S));
    pipeline += m * ways * boundary * (plan.training ? 2.0 : 1.0);
    return bytes;
  }
  // One transfer each way per micro-batch and chunk (none back in inference).
  const double chunks = static_cast<double>(plan.chunks);
  pipeline += m * chunks * (program.send_forward_bytes + (plan.training ? program.send_backward_bytes : 0.0));
  return bytes;
}

// One stage's figures from its representative device's events.
StageResult SummarizeStage(const Plan& plan, const Trace& trace, int64_t s) {
  const StageProgram& program = plan.stages[s];
  StageResult r;
  r.stage = s;
  r.memory = program.memory;
  const std::vector<const TraceEvent*> events = RepresentativeEvents(trace, s, plan.RepresentativeRank(s));
  StagePasses passes(program, RunsChunks(plan.schedule) ? plan.chunks : 1, plan.seq_chunks,
                     plan.overlap_forward_backward);
  const std::map<PassKey, PassComm> unit_comm = UnitComm(plan, s, passes);
  // A pass alone, by its kind, chunk and sequence chunk (each sequence chunk's attention takes its own time).
  std::map<std::tuple<EventKind, int64_t, int64_t>, PassComm> single_comm;
  PerDimension seconds{}, exposed{};
  constexpr auto kData = static_cast<size_t>(CommDimension::kData);
  constexpr auto kPipeline = static_cast<size_t>(CommDimension::kPipeline);
  double last_pass_end = 0, lane_end = 0, end = 0, forward = 0, backward = 0;
  // The weight gathers block the first pass until they end, or, overlapped
  // with the forward (overlap_param_gather), until FirstForwardStart.
  double gathers_end = 0;
  for (const TraceEvent* e : events)
    if (e->kind == EventKind::kWeightGather) gathers_end = std::max(gathers_end, e->end());
  const double passes_begin =
      program.GathersOverlapForward() ? std::min(gathers_end, program.FirstForwardStart()) : gathers_end;
  for (const TraceEvent* e : events) {
    // A stage does not wait for its last transfer to arrive: the receiver does.
    if (e->lane != Lane::kPipeline) end = std::max(end, e->end());
    switch (e->kind) {
      case EventKind::kWeightGather: {  // exposed while it holds the first pass back
        const double blocking = std::max(0.0, std::min(e->end(), passes_begin) - e->start);
        r.communication_seconds += e->duration;
        r.exposed_communication_seconds += blocking;
        seconds[kData] += e->duration;
        exposed[kData] += blocking;
        break;
      }
      case EventKind::kForward:
      case EventKind::kBackward:
      case EventKind::kWeightGradient: {
        (e->kind == EventKind::kForward ? forward : backward) += e->duration;
        r.compute_seconds += e->compute;
        r.communication_seconds += e->communication;
        r.exposed_communication_seconds += e->duration - e->compute;
        const auto unit = unit_comm.find({e->kind, e->micro_batch, e->chunk});
        auto single = single_comm.find({e->kind, e->chunk, e->seq_chunk});
        if (unit == unit_comm.end() && single == single_comm.end()) {
          // Micro-batch 0's pass over the same sequence chunk (Plan::SeqChunkOf).
          ScheduleItem item{e->kind == EventKind::kForward, e->seq_chunk, e->chunk};
          item.weight_gradient = e->kind == EventKind::kWeightGradient;
          single = single_comm
                       .emplace(std::make_tuple(e->kind, e->chunk, e->seq_chunk),
                                ClosedFormStepsComm(passes.Steps(item), program.PassTasks(item)))
                       .first;
        }
        const PassComm& closed = unit != unit_comm.end() ? unit->second : single->second;
        ShareOut(e->communication, closed.seconds, closed.seconds, seconds);
        ShareOut(e->duration - e->compute, closed.exposed, closed.seconds, exposed);
        last_pass_end = std::max(last_pass_end, e->end());
        break;
      }
      case EventKind::kOptimizer:
        r.compute_seconds += e->duration;
        break;
      case EventKind::kGradient:
      case EventKind::kSend:
        r.communication_seconds += e->duration;
        seconds[e->kind == EventKind::kSend ? kPipeline : kData] += e->duration;
        if (e->lane == Lane::kCommunication) lane_end = std::max(lane_end, e->end());
        break;
      case EventKind::kReceive:  // waiting on the compute stream: a gap between passes
        break;
    }
  }
  // Gaps between the passes, from the end of the weight gathers.
  double covered = passes_begin;
  for (const TraceEvent* e : events) {
    if (!e->IsPass()) continue;
    if (e->start > covered) r.bubbles.push_back({covered, e->start});
    covered = std::max(covered, e->end());
  }
  for (const Interval& b : r.bubbles) r.bubble_seconds += b.end - b.start;
  // The gradient tail: the communication stream running past the last pass.
  r.exposed_communication_seconds += std::max(0.0, lane_end - last_pass_end);
  exposed[kData] += std::max(0.0, lane_end - last_pass_end);
  const PerDimension bytes = StepBytes(plan, program);
  for (size_t d = 0; d < seconds.size(); ++d)
    r.communication.push_back({static_cast<CommDimension>(d), seconds[d], bytes[d], exposed[d]});
  // Per micro-batch: under sequence pipelining, its seq_chunks passes together.
  const double micro_batches = static_cast<double>(plan.micro_batch_num());
  r.forward_seconds = forward / micro_batches;
  r.backward_seconds = backward / micro_batches;
  r.passes_end_seconds = last_pass_end;
  r.end_seconds = end;
  return r;
}

}  // namespace

StepResult Summarize(const Plan& plan, Trace trace) {
  StepResult r;
  r.engine = trace.engine;
  r.engine_detail = trace.detail;
  r.wall_seconds = trace.wall_seconds;
  r.simulated_devices = trace.simulated_devices;
  r.link_usage = std::move(trace.link_usage);
  for (int64_t s = 0; s < static_cast<int64_t>(plan.stages.size()); ++s)
    r.stages.push_back(SummarizeStage(plan, trace, s));
  r.events = std::move(trace.events);

  for (const auto& s : r.stages) {
    if (s.end_seconds > r.step_seconds) {
      r.step_seconds = s.end_seconds;
      r.slowest_stage = s.stage;
    }
  }
  const StageResult& slow = r.stages[r.slowest_stage];
  r.compute_seconds = slow.compute_seconds;
  r.communication_seconds = slow.communication_seconds;
  r.exposed_communication_seconds = slow.exposed_communication_seconds;
  r.bubble_seconds = slow.bubble_seconds;
  r.bubble_fraction = r.step_seconds > 0 ? slow.bubble_seconds / r.step_seconds : 0;
  if (r.step_seconds > 0) {
    r.samples_per_second = static_cast<double>(plan.samples_per_step) / r.step_seconds;
    r.tokens_per_second = static_cast<double>(plan.tokens_per_step) / r.step_seconds;
    const double per_device = plan.model_flops / r.step_seconds / static_cast<double>(plan.devices);
    r.tflops_per_device = per_device / 1e12;
    r.mfu = plan.peak_flops > 0 ? per_device / plan.peak_flops : 0;
  }
  const std::pair<double, const char*> parts[] = {{slow.compute_seconds, "compute takes"},
                                                  {slow.exposed_communication_seconds, "exposed communication takes"},
                                                  {slow.bubble_seconds, "pipeline bubbles take"}};
  const auto* biggest = std::max_element(std::begin(parts), std::end(parts));
  r.slowest_reason = fmt::format("{} {:.1f}% of its step", biggest->second,
                                 r.step_seconds > 0 ? 100 * biggest->first / r.step_seconds : 0.0);
  for (auto& s : r.stages) {
    s.out_of_memory = s.memory.peak > plan.device_memory;
    if (s.out_of_memory && !r.out_of_memory) {
      r.out_of_memory = true;
      r.memory_message = fmt::format("stage {} needs {} per device but devices have {}; {} dominate ({})", s.stage,
                                     FormatQuantity(s.memory.peak, Quantity::kBytes),
                                     FormatQuantity(plan.device_memory, Quantity::kBytes), s.memory.dominant,
                                     FormatQuantity(s.memory.dominant_bytes, Quantity::kBytes));
    }
  }
  return r;
}

nlohmann::json ToJson(const StageResult& s) {
  nlohmann::json bubbles = nlohmann::json::array();
  for (const Interval& b : s.bubbles) bubbles.push_back({b.start, b.end});
  nlohmann::json communication = nlohmann::json::array();
  for (const DimensionCommunication& c : s.communication)
    communication.push_back({{"dimension", ToString(c.dimension)},
                             {"seconds", c.seconds},
                             {"bytes", c.bytes},
                             {"exposed_seconds", c.exposed_seconds}});
  return {{"stage", s.stage},
          {"forward_seconds_per_micro_batch", s.forward_seconds},
          {"backward_seconds_per_micro_batch", s.backward_seconds},
          {"compute_seconds", s.compute_seconds},
          {"communication_seconds", s.communication_seconds},
          {"exposed_communication_seconds", s.exposed_communication_seconds},
          {"bubble_seconds", s.bubble_seconds},
          {"bubbles", bubbles},
          {"passes_end_seconds", s.passes_end_seconds},
          {"end_seconds", s.end_seconds},
          {"memory", ToJson(s.memory)},
          {"out_of_memory", s.out_of_memory},
          {"communication_by_dimension", communication}};
}

StageResult StageResultFromJson(const nlohmann::json& s) {
  StageResult st;
  st.stage = s.at("stage");
  st.forward_seconds = s.at("forward_seconds_per_micro_batch");
  st.backward_seconds = s.at("backward_seconds_per_micro_batch");
  st.compute_seconds = s.at("compute_seconds");
  st.communication_seconds = s.at("communication_seconds");
  st.exposed_communication_seconds = s.at("exposed_communication_seconds");
  st.bubble_seconds = s.at("bubble_seconds");
  if (s.contains("bubbles"))  // result.json files written before bubbles were listed have none
    for (const auto& b : s.at("bubbles")) st.bubbles.push_back({b.at(0).get<double>(), b.at(1).get<double>()});
  st.passes_end_seconds = s.at("passes_end_seconds");
  st.end_seconds = s.at("end_seconds");
  const auto& m = s.at("memory");
  st.memory.parameters = m.at("parameters");
  st.memory.gathered_weights = m.value("gathered_weights", 0.0);  // result.json files written before it was counted
  st.memory.gradients = m.at("gradients");
  st.memory.optimizer_states = m.at("optimizer_states");
  st.memory.activations_per_micro_batch = m.at("activations_per_micro_batch");
  st.memory.micro_batches_in_flight = m.at("micro_batches_in_flight");
  // result.json files written before split backwards were simulated have none
  st.memory.held_for_weight_gradients = m.value("held_for_weight_gradients", 0.0);
  st.memory.activations = m.at("activations");
  st.memory.communication_buffers = m.at("communication_buffers");
  st.memory.host = m.value("host", 0.0);  // result.json files written before host memory was counted
  st.memory.peak = m.at("peak");
  st.memory.dominant = m.at("dominant");
  st.memory.dominant_bytes = m.at("dominant_bytes");
  st.out_of_memory = s.at("out_of_memory");
  if (s.contains("communication_by_dimension"))  // result.json files written before it was reported have none
    for (const auto& c : s.at("communication_by_dimension"))
      st.communication.push_back(
          {ParseCommDimension(c.at("dimension")), c.at("seconds"), c.at("bytes"), c.at("exposed_seconds")});
  return st;
}

nlohmann::json ToJson(const StepResult& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : r.stages) stages.push_back(ToJson(s));
  nlohmann::json j = {{"engine", r.engine},
                      {"step_seconds", r.step_seconds},
                      {"samples_per_second", r.samples_per_second},
                      {"tokens_per_second", r.tokens_per_second},
                      {"tflops_per_device", r.tflops_per_device},
                      {"mfu", r.mfu},
                      {"compute_seconds", r.compute_seconds},
                      {"communication_seconds", r.communication_seconds},
                      {"exposed_communication_seconds", r.exposed_communication_seconds},
                      {"bubble_seconds", r.bubble_seconds},
                      {"bubble_fraction", r.bubble_fraction},
                      {"slowest_stage", r.slowest_stage},
                      {"slowest_reason", r.slowest_reason},
                      {"out_of_memory", r.out_of_memory},
                      {"memory_message", r.memory_message},
                      {"stages", stages}};
  if (!r.engine_detail.empty()) j["engine_detail"] = r.engine_detail;
  if (r.simulated_devices > 0) j["simulated_devices"] = r.simulated_devices;
  j["wall_seconds"] = r.wall_seconds;
  if (!r.link_usage.empty()) {
    nlohmann::json usage = nlohmann::json::array();
    for (const LinkClassUsage& u : r.link_usage) usage.push_back(ToJson(u));
    j["link_usage"] = usage;
  }
  if (!r.events.empty()) {
    nlohmann::json events = nlohmann::json::array();
    for (const TraceEvent& e : r.events) events.push_back(ToJson(e));
    j["events"] = events;
  }
  return j;
}

StepResult StepResultFromJson(const nlohmann::json& j) {
  StepResult r;
  r.engine = j.at("engine");
  r.engine_detail = j.value("engine_detail", "");
  r.simulated_devices = j.value("simulated_devices", int64_t{0});
  r.wall_seconds = j.value("wall_seconds", 0.0);
  if (j.contains("link_usage"))
    for (const nlohmann::json& u : j.at("link_usage")) r.link_usage.push_back(LinkClassUsageFromJson(u));
  r.step_seconds = j.at("step_seconds");
  r.samples_per_second = j.at("samples_per_second");
  r.tokens_per_second = j.at("tokens_per_second");
  r.tflops_per_device = j.at("tflops_per_device");
  r.mfu = j.at("mfu");
  r.compute_seconds = j.at("compute_seconds");
  r.communication_seconds = j.at("communication_seconds");
  r.exposed_communication_seconds = j.at("exposed_communication_seconds");
  r.bubble_seconds = j.at("bubble_seconds");
  r.bubble_fraction = j.at("bubble_fraction");
  r.slowest_stage = j.at("slowest_stage");
  r.slowest_reason = j.at("slowest_reason");
  r.out_of_memory = j.at("out_of_memory");
  r.memory_message = j.at("memory_message");
  for (const auto& s : j.at("stages")) r.stages.push_back(StageResultFromJson(s));
  if (j.contains("events"))
    for (const auto& e : j.at("events")) r.events.push_back(TraceEventFromJson(e));
  return r;
}

}  // namespace shardlab
