#include "core/config/simulation_options.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/util/enum_names.h"
#include "core/util/json_reader.h"

namespace shardlab {
namespace {

constexpr EnumNames<Engine, 3> kEngines({"simgrid", "analytical", "both"});
constexpr EnumNames<StepMode, 2> kModes({"train", "infer"});
constexpr EnumNames<PipelineSchedule, 9> kSchedules({"1f1b", "gpipe", "interleaved", "zero_bubble_h1", "zero_bubble_v",
                                                     "dualpipe", "seqpipe", "seqvpp", "seqsmartvpp"});
constexpr EnumNames<Fidelity, 2> kFidelities({"aggregated", "step"});
constexpr EnumNames<Symmetry, 2> kSymmetries({"fold", "off"});
constexpr EnumNames<Optimizer, 5> kOptimizers({"adam", "lamb", "momentum", "sgd", "adam_offload"});

template <typename Enum, size_t N>
Enum Read(ObjectReader& r, const std::string& key, Enum fallback, const EnumNames<Enum, N>& names) {
  return *names.Find(r.Enum(key, names[fallback], names.All()));
}

}  // namespace

const char* ToString(Engine e) { return kEngines[e]; }
const char* ToString(StepMode m) { return kModes[m]; }
const char* ToString(PipelineSchedule s) { return kSchedules[s]; }
bool SplitsBackward(PipelineSchedule s) {
  return s == PipelineSchedule::kZeroBubbleH1 || s == PipelineSchedule::kZeroBubbleV ||
         s == PipelineSchedule::kDualPipe;
}
bool RunsChunks(PipelineSchedule s) {
  return s == PipelineSchedule::kInterleaved || RunsTwoChunks(s) || RunsSequenceChunks(s);
}
bool RunsTwoChunks(PipelineSchedule s) {
  return s == PipelineSchedule::kZeroBubbleV || s == PipelineSchedule::kDualPipe;
}
bool RunsSequenceChunks(PipelineSchedule s) {
  return s == PipelineSchedule::kSeqPipe || s == PipelineSchedule::kSeqVpp || s == PipelineSchedule::kSeqSmartVpp;
}
const char* ToString(Fidelity f) { return kFidelities[f]; }
const char* ToString(Optimizer o) { return kOptimizers[o]; }
const char* ToString(Symmetry s) { return kSymmetries[s]; }

std::vector<std::string> EngineNames() { return kEngines.All(); }
Engine ParseEngine(const std::string& name) { return kEngines.Parse(name, "engine"); }
PipelineSchedule ParsePipelineSchedule(const std::string& name) { return kSchedules.Parse(name, "pipeline schedule"); }
Fidelity ParseFidelity(const std::string& name) { return kFidelities.Parse(name, "fidelity"); }
Symmetry ParseSymmetry(const std::string& name) { return kSymmetries.Parse(name, "symmetry"); }
std::vector<std::string> SymmetryNames() { return kSymmetries.All(); }

std::vector<std::string> SimulationKeyVocabulary(const std::string& key) {
  if (key == "engine") return kEngines.All();
  if (key == "mode") return kModes.All();
  if (key == "pipeline_schedule") return kSchedules.All();
  if (key == "fidelity") return kFidelities.All();
  if (key == "symmetry") return kSymmetries.All();
  if (key == "optimizer") return kOptimizers.All();
  return {};
}

namespace {

// true (every dimension), false (none), or a list of dimension names.
std::vector<CommDimension> ReadOverlap(const JsonNode& node) {
  std::vector<CommDimension> dimensions;
  if (node.json().is_boolean()) {
    if (node.AsBool())
      for (const std::string& name : CommDimensionNames()) dimensions.push_back(ParseCommDimension(name));
    return dimensions;
  }
  if (!node.json().is_array() || node.json().empty())
    node.Fail("expected true, false or a non-empty list of communication dimensions (" +
              fmt::format("{}", fmt::join(CommDimensionNames(), ", ")) + ")");
  for (const JsonNode& element : node.AsArray()) {
    const CommDimension d = ParseCommDimension(element.AsEnum(CommDimensionNames()));
    if (std::find(dimensions.begin(), dimensions.end(), d) != dimensions.end())
      element.Fail(std::string("dimension \"") + ToString(d) + "\" is listed twice");
    dimensions.push_back(d);
  }
  std::sort(dimensions.begin(), dimensions.end());  // one spelling of a set
  return dimensions;
}

}  // namespace

SimulationOptions ReadSimulation(const JsonNode& node, const SimulationOptions& defaults) {
  ObjectReader r(node);
  SimulationOptions s = defaults;
  s.engine = Read(r, "engine", s.engine, kEngines);
  s.mode = Read(r, "mode", s.mode, kModes);
  s.pipeline_schedule = Read(r, "pipeline_schedule", s.pipeline_schedule, kSchedules);
  const auto chunks = r.Optional("virtual_pipeline_chunks");
  if (chunks) s.virtual_pipeline_chunks = chunks->AsInt(1, 64);
  if (const auto overlap = r.Optional("overlap_forward_backward")) s.overlap_forward_backward = ReadOverlap(*overlap);
  const auto zbv_offset = r.Optional("zbv_offset");
  if (zbv_offset) s.zbv_offset = zbv_offset->AsInt(0, 4096);
  s.fidelity = Read(r, "fidelity", s.fidelity, kFidelities);
  s.symmetry = Read(r, "symmetry", s.symmetry, kSymmetries);
  s.optimizer = Read(r, "optimizer", s.optimizer, kOptimizers);
  if (auto algos = r.Optional("collective_algorithms")) {
    ObjectReader a(*algos);
    std::vector<std::string> algorithms = {"auto"};
    for (const std::string& name : AlgorithmNames())
      if (name != ToString(CollectiveAlgorithm::kDirect)) algorithms.push_back(name);
    for (const std::string& type : CollectiveNames()) {
      if (type == ToString(Collective::kSendRecv)) continue;
      const auto v = a.Optional(type);
      if (!v) continue;
      const std::string algorithm = v->AsEnum(algorithms);
      if (algorithm != "auto") s.collective_algorithms[ParseCollective(type)] = ParseAlgorithm(algorithm);
    }
    a.Finish();
  }
  r.Finish();
  if (s.virtual_pipeline_chunks > 1 && !RunsChunks(s.pipeline_schedule))
    chunks->Fail(
        "virtual_pipeline_chunks > 1 needs pipeline_schedule \"interleaved\", \"zero_bubble_v\", \"dualpipe\", "
        "\"seqpipe\", \"seqvpp\" or \"seqsmartvpp\"");
  if (RunsTwoChunks(s.pipeline_schedule)) {
    // zero_bubble_v's two chunks are its V's two arms, dualpipe's its two directions.
    if (chunks && s.virtual_pipeline_chunks != 2)
      chunks->Fail(
          fmt::format("pipeline_schedule \"{}\" runs exactly 2 chunks per stage", ToString(s.pipeline_schedule)));
    s.virtual_pipeline_chunks = 2;
  }
  if (s.zbv_offset > 0 && s.pipeline_schedule != PipelineSchedule::kZeroBubbleV)
    zbv_offset->Fail(fmt::format("zbv_offset (MindSpore's ZBV_offset) tunes the zero_bubble_v schedule, not \"{}\"",
                                 ToString(s.pipeline_schedule)));
  // A schedule from `defaults` is checked by whoever chose it.
  if (s.pipeline_schedule == PipelineSchedule::kInterleaved && s.virtual_pipeline_chunks < 2 &&
      node.json().contains("pipeline_schedule"))
    node.Fail("pipeline_schedule \"interleaved\" needs virtual_pipeline_chunks >= 2");
  return s;
}

nlohmann::json ToJson(const SimulationOptions& s) {
  nlohmann::json j = {{"engine", ToString(s.engine)},
                      {"mode", ToString(s.mode)},
                      {"pipeline_schedule", ToString(s.pipeline_schedule)},
                      {"virtual_pipeline_chunks", s.virtual_pipeline_chunks},
                      {"fidelity", ToString(s.fidelity)},
                      {"symmetry", ToString(s.symmetry)},
                      {"optimizer", ToString(s.optimizer)}};
  if (s.zbv_offset > 0) j["zbv_offset"] = s.zbv_offset;
  if (s.overlap_forward_backward.size() == static_cast<size_t>(kCommDimensions)) {
    j["overlap_forward_backward"] = true;
  } else if (!s.overlap_forward_backward.empty()) {
    nlohmann::json& dimensions = j["overlap_forward_backward"];
    for (CommDimension d : s.overlap_forward_backward) dimensions.push_back(ToString(d));
  }
  if (!s.collective_algorithms.empty()) {
    nlohmann::json& algorithms = j["collective_algorithms"];
    for (const auto& [c, a] : s.collective_algorithms) algorithms[ToString(c)] = ToString(a);
  }
  return j;
}

}  // namespace shardlab
