#include "core/report/trace.h"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace shardlab {
namespace {

constexpr std::array<const char*, 3> kLanes = {"compute", "communication", "pipeline"};
constexpr std::array<const char*, 8> kKinds = {"forward",  "backward", "optimizer", "weight_gather",
                                               "gradient", "send",     "receive",   "weight_gradient"};

template <typename Enum, size_t N>
Enum Parse(const std::array<const char*, N>& names, const std::string& name, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<Enum>(i);
  throw std::invalid_argument(fmt::format("unknown {} \"{}\"", what, name));
}

}  // namespace

const char* ToString(Lane lane) { return kLanes.at(static_cast<size_t>(lane)); }
const char* ToString(EventKind kind) { return kKinds.at(static_cast<size_t>(kind)); }
Lane ParseLane(const std::string& name) { return Parse<Lane>(kLanes, name, "timeline lane"); }
EventKind ParseEventKind(const std::string& name) { return Parse<EventKind>(kKinds, name, "timeline event category"); }

nlohmann::json ToJson(const LinkClassUsage& u) {
  return {{"name", u.name},
          {"links", u.links},
          {"bandwidth", u.bandwidth},
          {"bin_seconds", u.bin_seconds},
          {"utilisation", u.utilisation},
          {"mean_utilisation", u.mean_utilisation},
          {"peak_utilisation", u.peak_utilisation},
          {"busiest", u.busiest},
          {"busiest_utilisation", u.busiest_utilisation},
          {"links_by_utilisation", u.links_by_utilisation}};
}

LinkClassUsage LinkClassUsageFromJson(const nlohmann::json& j) {
  LinkClassUsage u;
  u.name = j.at("name").get<std::string>();
  u.links = j.at("links").get<int64_t>();
  u.bandwidth = j.at("bandwidth").get<double>();
  u.bin_seconds = j.at("bin_seconds").get<double>();
  u.utilisation = j.at("utilisation").get<std::vector<double>>();
  u.mean_utilisation = j.at("mean_utilisation").get<double>();
  u.peak_utilisation = j.at("peak_utilisation").get<double>();
  u.busiest = j.at("busiest").get<std::string>();
  u.busiest_utilisation = j.at("busiest_utilisation").get<double>();
  u.links_by_utilisation = j.value("links_by_utilisation", std::vector<int64_t>{});  // absent in older results
  return u;
}

EventKind PassKind(const ScheduleItem& item) {
  return item.forward ? EventKind::kForward : item.weight_gradient ? EventKind::kWeightGradient : EventKind::kBackward;
}

TraceEvent MakeEvent(int64_t stage, Lane lane, EventKind kind, std::string name, double start, double duration,
                     std::vector<int64_t> ranks) {
  TraceEvent e;
  e.stage = stage;
  e.lane = lane;
  e.kind = kind;
  e.name = std::move(name);
  e.start = start;
  e.duration = duration;
  e.ranks = std::move(ranks);
  return e;
}

std::vector<const TraceEvent*> RepresentativeEvents(const Trace& trace, int64_t stage, int64_t rank) {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : trace.events)
    if (e.stage == stage && (e.ranks.empty() || std::count(e.ranks.begin(), e.ranks.end(), rank) > 0))
      out.push_back(&e);
  std::stable_sort(out.begin(), out.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->start < b->start; });
  return out;
}

nlohmann::json ToJson(const TraceEvent& e) {
  nlohmann::json j = {{"stage", e.stage},
                      {"lane", ToString(e.lane)},
                      {"name", e.name},
                      {"category", ToString(e.kind)},
                      {"micro_batch", e.micro_batch},
                      {"seq_chunk", e.seq_chunk},
                      {"chunk", e.chunk},
                      {"start", e.start},
                      {"duration", e.duration},
                      {"ranks", e.ranks}};
  if (e.IsPass()) {
    j["compute"] = e.compute;
    j["communication"] = e.communication;
  }
  return j;
}

TraceEvent TraceEventFromJson(const nlohmann::json& j) {
  TraceEvent e;
  e.stage = j.at("stage");
  e.lane = ParseLane(j.at("lane"));
  e.kind = ParseEventKind(j.at("category"));
  e.name = j.at("name");
  e.micro_batch = j.at("micro_batch");
  e.seq_chunk = j.value("seq_chunk", int64_t{0});  // absent from result.json files written before it
  e.chunk = j.at("chunk");
  e.start = j.at("start");
  e.duration = j.at("duration");
  e.ranks = j.at("ranks").get<std::vector<int64_t>>();
  if (e.IsPass()) {  // absent from result.json files written before passes carried them
    e.compute = j.value("compute", 0.0);
    e.communication = j.value("communication", 0.0);
  }
  return e;
}

nlohmann::json ChromeTrace(const std::vector<TraceEvent>& trace_events, int64_t stages) {
  nlohmann::json events = nlohmann::json::array();
  std::map<std::pair<int64_t, std::vector<int64_t>>, int> track_base;
  for (int64_t s = 0; s < stages; ++s) {
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", s}, {"args", {{"name", fmt::format("stage {}", s)}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", s}, {"args", {{"sort_index", s}}}});
  }
  for (const TraceEvent& e : trace_events) {
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
                          {"args", {{"name", who + kLanes[lane]}}}});
        events.push_back({{"ph", "M"},
                          {"name", "thread_sort_index"},
                          {"pid", e.stage},
                          {"tid", it->second + lane},
                          {"args", {{"sort_index", it->second + lane}}}});
      }
    }
    nlohmann::json args = {{"category", ToString(e.kind)}};
    if (e.micro_batch >= 0) args["micro_batch"] = e.micro_batch;
    if (e.chunk > 0) args["chunk"] = e.chunk;
    if (e.seq_chunk > 0) args["seq_chunk"] = e.seq_chunk;
    if (!e.ranks.empty()) args["ranks"] = e.ranks;
    events.push_back({{"ph", "X"},
                      {"name", e.name},
                      {"cat", ToString(e.kind)},
                      {"pid", e.stage},
                      {"tid", it->second + static_cast<int>(e.lane)},
                      {"ts", e.start * 1e6},
                      {"dur", e.duration * 1e6},
                      {"args", args}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace shardlab
