#include "core/report/step_result.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config/units.h"

namespace shardlab {

void Finalize(const Plan& plan, StepResult& r) {
  r.step_seconds = 0;
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
  const std::pair<double, const char*> parts[] = {{slow.compute_seconds, "compute"},
                                                  {slow.exposed_communication_seconds, "exposed communication"},
                                                  {slow.bubble_seconds, "pipeline bubbles"}};
  const auto* biggest = std::max_element(std::begin(parts), std::end(parts));
  r.slowest_reason = fmt::format("{} takes {:.1f}% of its step", biggest->second,
                                 r.step_seconds > 0 ? 100 * biggest->first / r.step_seconds : 0.0);
  r.out_of_memory = false;
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
}

nlohmann::json ToJson(const StageResult& s) {
  return {{"stage", s.stage},
          {"forward_seconds_per_micro_batch", s.forward_seconds},
          {"backward_seconds_per_micro_batch", s.backward_seconds},
          {"compute_seconds", s.compute_seconds},
          {"communication_seconds", s.communication_seconds},
          {"exposed_communication_seconds", s.exposed_communication_seconds},
          {"bubble_seconds", s.bubble_seconds},
          {"passes_end_seconds", s.passes_end_seconds},
          {"end_seconds", s.end_seconds},
          {"memory", ToJson(s.memory)},
          {"out_of_memory", s.out_of_memory}};
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
  st.passes_end_seconds = s.at("passes_end_seconds");
  st.end_seconds = s.at("end_seconds");
  const auto& m = s.at("memory");
  st.memory.parameters = m.at("parameters");
  st.memory.gradients = m.at("gradients");
  st.memory.optimizer_states = m.at("optimizer_states");
  st.memory.activations_per_micro_batch = m.at("activations_per_micro_batch");
  st.memory.micro_batches_in_flight = m.at("micro_batches_in_flight");
  st.memory.activations = m.at("activations");
  st.memory.communication_buffers = m.at("communication_buffers");
  st.memory.peak = m.at("peak");
  st.memory.dominant = m.at("dominant");
  st.memory.dominant_bytes = m.at("dominant_bytes");
  st.out_of_memory = s.at("out_of_memory");
  return st;
}

nlohmann::json ToJson(const TimelineEvent& e) {
  return {{"stage", e.stage},       {"lane", e.lane},   {"name", e.name},         {"category", e.category},
          {"micro_batch", e.micro_batch}, {"chunk", e.chunk}, {"start", e.start}, {"duration", e.duration},
          {"ranks", e.ranks}};
}

TimelineEvent TimelineEventFromJson(const nlohmann::json& e) {
  return {e.at("stage"), e.at("lane"),  e.at("name"),     e.at("category"),
          e.at("micro_batch"), e.at("chunk"), e.at("start"), e.at("duration"),
          e.at("ranks").get<std::vector<int64_t>>()};
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
  if (!r.events.empty()) {
    nlohmann::json events = nlohmann::json::array();
    for (const TimelineEvent& e : r.events) events.push_back(ToJson(e));
    j["events"] = events;
  }
  return j;
}

StepResult StepResultFromJson(const nlohmann::json& j) {
  StepResult r;
  r.engine = j.at("engine");
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
    for (const auto& e : j.at("events")) r.events.push_back(TimelineEventFromJson(e));
  return r;
}

nlohmann::json ChromeTrace(const StepResult& r) {
  // One process per stage; per traced device (or lane of devices in lockstep)
  // a compute, a communication and a pipeline track.
  nlohmann::json events = nlohmann::json::array();
  const char* lanes[] = {"compute", "communication", "pipeline"};
  std::map<std::pair<int64_t, std::vector<int64_t>>, int> track_base;
  for (const auto& s : r.stages) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", s.stage},
                      {"args", {{"name", fmt::format("stage {}", s.stage)}}}});
    events.push_back(
        {{"ph", "M"}, {"name", "process_sort_index"}, {"pid", s.stage}, {"args", {{"sort_index", s.stage}}}});
  }
  for (const auto& e : r.events) {
    const auto key = std::make_pair(e.stage, e.ranks);
    auto [it, inserted] = track_base.emplace(key, 0);
    if (inserted) {
      int devices = 0;
      for (const auto& [k, base] : track_base) devices += k.first == e.stage ? 1 : 0;
      it->second = 3 * (devices - 1);
      const std::string who = e.ranks.empty()       ? std::string()
                              : e.ranks.size() == 1 ? fmt::format("rank {} ", e.ranks.front())
                                                    : fmt::format("ranks {}-{} ", e.ranks.front(), e.ranks.back());
      for (int lane = 0; lane < 3; ++lane) {
        events.push_back({{"ph", "M"},
                          {"name", "thread_name"},
                          {"pid", e.stage},
                          {"tid", it->second + lane},
                          {"args", {{"name", who + lanes[lane]}}}});
        events.push_back({{"ph", "M"},
                          {"name", "thread_sort_index"},
                          {"pid", e.stage},
                          {"tid", it->second + lane},
                          {"args", {{"sort_index", it->second + lane}}}});
      }
    }
    const int lane = static_cast<int>(std::find(std::begin(lanes), std::end(lanes), e.lane) - std::begin(lanes));
    nlohmann::json args = {{"category", e.category}};
    if (e.micro_batch >= 0) args["micro_batch"] = e.micro_batch;
    if (e.chunk > 0) args["chunk"] = e.chunk;
    if (!e.ranks.empty()) args["ranks"] = e.ranks;
    events.push_back({{"ph", "X"},
                      {"name", e.name},
                      {"cat", e.category},
                      {"pid", e.stage},
                      {"tid", it->second + lane},
                      {"ts", e.start * 1e6},
                      {"dur", e.duration * 1e6},
                      {"args", args}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace shardlab
