#include "core/config/run_config.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/graph/fp8_format.h"
#include "core/util/input_file.h"
#include "core/util/json_reader.h"
#include "core/util/paths.h"
#include "core/util/quote.h"
#include "core/util/warning.h"

namespace shardlab {
namespace {

namespace fs = std::filesystem;

// A section given inline or as a path relative to the run file: returns the
// document that holds it and where its errors should point.
struct Section {
  nlohmann::json document;  // only set for files
  std::string file;         // the file the section came from, "" when inline
};

Section OpenSection(const JsonNode& node) {
  if (node.json().is_object()) return {};
  const std::string path = ResolveRelativeTo(node.file(), node.AsString());
  if (const std::string problem = InputFileProblem(path); !problem.empty())
    node.Fail("the file " + Quoted(path, 400) + " " + problem);
  return {ReadJsonFile(path), path};
}

// The key that asks for overlapped forwards and backwards, and its name.
std::pair<JsonNode, std::string> OverlapKey(const RunSpec& run, const JsonNode& root) {
  if (!run.ascend_config.pp_1f1b_overlap.empty()) return {root.Child("ascend_config"), "pp_1f1b_overlap"};
  return {root.Child("simulation").Child("overlap_forward_backward"), "overlap_forward_backward"};
}

// Megatron's tp-pp-dp numbering: consecutive tensor-parallel blocks, one per
// stage of a data-parallel replica, whole servers or whole fractions of one,
// and none of the dimensions Megatron rules out with it.
void CheckRankOrder(const RunSpec& run, const JsonNode& root) {
  if (run.stack.rank_order != RankOrder::kTpPpDp) return;
  const JsonNode key = root.Child("stack").Child("rank_order");
  if (run.stack.preset != StackPreset::kMegatron)
    key.Fail(
        "rank order tp-pp-dp is Megatron's (--use-tp-pp-dp-mapping); MindSpore numbers its stages "
        "stage = rank / (device_num / pipeline_stages): set the stack's preset to megatron");
  const auto& values = run.model.params.values();
  if (!values.count("model_parallel"))
    key.Fail(
        fmt::format("rank order tp-pp-dp keeps each tensor-parallel group consecutive, so it needs "
                    "model_params.model_parallel; model \"{}\" gives none",
                    run.model.name));
  for (const char* dimension : {"context_parallel", "expert_parallel"})
    if (values.count(dimension) && run.model.params.Int(dimension) > 1)
      key.Fail(
          fmt::format("rank order tp-pp-dp is not built with {} {} (Megatron's --use-tp-pp-dp-mapping rules "
                      "out context and expert parallelism)",
                      dimension, run.model.params.Int(dimension)));
  const int64_t mp = run.model.params.Int("model_parallel"), dps = run.cluster.devices_per_server;
  if (run.parallel.devices_per_stage() % mp != 0)
    key.Fail(fmt::format("rank order tp-pp-dp needs model_parallel {} to divide the {} devices of a stage", mp,
                         run.parallel.devices_per_stage()));
  if (dps % mp != 0 && mp % dps != 0)
    key.Fail(
        fmt::format("rank order tp-pp-dp needs model_parallel {} to divide the {} devices of a server or be "
                    "a multiple of them, so that every tensor-parallel block sits alike",
                    mp, dps));
}

// Rules between the sections: device counts, batch splits, dtypes.

void CheckRun(const RunSpec& run, const JsonNode& root, const JsonNode& parallel_node) {
  CheckRankOrder(run, root);
  const auto& p = run.parallel;
  if (p.device_num > run.cluster.device_count())
    parallel_node.Child("device_num")
        .Fail(fmt::format("cluster \"{}\" has {} devices, device_num asks for {}", run.cluster.name,
                          run.cluster.device_count(), p.device_num));
  if (run.model.graph) {
    std::vector<bool> used(p.pipeline_stages, false);
    for (const Operator& op : run.model.graph->operators()) {
      if (op.pipeline_stage >= p.pipeline_stages)
        root.Child("model").Fail(fmt::format(
            "operator \"{}\" of model \"{}\" is in pipeline_stage {}, but the run has pipeline_stages {} (stages "
            "0..{})",
            op.name, run.model.name, op.pipeline_stage, p.pipeline_stages, p.pipeline_stages - 1));
      used[op.pipeline_stage] = true;
    }
    for (int64_t stage = 0; stage < p.pipeline_stages; ++stage)
      if (!used[stage])
        parallel_node.Child("pipeline_stages")
            .Fail(fmt::format("pipeline stage {} of {} has no operator of model \"{}\" (its operators' "
                              "pipeline_stage values reach {})",
                              stage, p.pipeline_stages, run.model.name, run.model.graph->stage_count() - 1));
  }
  const auto& values = run.model.params.values();
  if (values.count("dtype") || run.model.graph) {
    const DType dtype = ComputeDType(run.model);
    if (!run.cluster.device.peak_flops.count(dtype))
      root.Child("cluster").Fail(
          fmt::format("the {} has no peak_flops for the model's dtype {}", run.cluster.device.model, ToString(dtype)));
  }
  if (run.model.graph && !run.cluster.device.peak_flops.count(DType::kFloat8E4M3))
    for (const Operator& op : run.model.graph->operators())
      if (Fp8GemmDType(op, false))
        root.Child("model").Fail(fmt::format(
            "operator \"{}\" of model \"{}\" has fp8_format \"{}\", but the {} has no peak_flops for float8_e4m3fn",
            op.name, run.model.name, op.StringAttr("fp8_format", ""), run.cluster.device.model));
  if (values.count("fp8") && run.model.params.String("fp8") != "off" &&
      !run.cluster.device.peak_flops.count(DType::kFloat8E4M3)) {
    const auto params = root.json().contains("model_params") ? root.Child("model_params") : root.Child("model");
    (params.json().is_object() && params.json().contains("fp8") ? params.Child("fp8") : params)
        .Fail(fmt::format("fp8 \"{}\" needs FP8 tensor cores, but the {} has no peak_flops for float8_e4m3fn",
                          run.model.params.String("fp8"), run.cluster.device.model));
  }
  if (!p.recompute_modules.empty() && p.recompute)
    parallel_node.Child("recompute_modules")
        .Fail(
            "recompute_modules chooses parts of each layer to recompute, and recompute already recomputes the "
            "whole layer: use one of them");
  if (p.cpu_offloading_num_layers > 0) {
    if (p.recompute || p.select_recompute || !p.recompute_modules.empty())
      parallel_node.Child("cpu_offloading_num_layers")
          .Fail(fmt::format("activation offloading copies what a layer keeps for backward, and a recomputed layer "
                            "keeps only its input: use one of cpu_offloading_num_layers and {} (Megatron refuses "
                            "both at once)",
                            p.recompute          ? "recompute"
                            : p.select_recompute ? "select_recompute"
                                                 : "recompute_modules"));
    if (p.micro_batch_interleaved > 1)
      parallel_node.Child("cpu_offloading_num_layers")
          .Fail("activation offloading is not built with micro_batch_interleaved: its slices would each copy a "
                "share of every layer");
    if (RunsChunks(run.simulation.pipeline_schedule))
      parallel_node.Child("cpu_offloading_num_layers")
          .Fail(fmt::format("activation offloading is not built with the {} pipeline schedule (Megatron takes it only "
                            "without pipeline parallelism): the first layers of a stage would fill its first chunks",
                            ToString(run.simulation.pipeline_schedule)));
    if (run.model.graph)
      parallel_node.Child("cpu_offloading_num_layers")
          .Fail(fmt::format("model \"{}\" is a graph file, which has no repeated layers to count: mark its "
                            "operators \"offload_activations\": true instead",
                            run.model.name));
  }
  if (values.count("expert_parallel") && run.model.params.Int("expert_parallel") > 1 && !p.enable_alltoall)
    Warn(
        fmt::format("{}: expert_parallel {} without parallel.enable_alltoall: tokens reach their experts by AllGather "
                    "and a local slice, as MindSpore does by default (MindFormers sets enable_alltoall for expert "
                    "parallel)",
                    root.file(), run.model.params.Int("expert_parallel")));
  const std::string cp_algo =
      values.count("context_parallel_algo") ? run.model.params.String("context_parallel_algo") : "colossalai_cp";
  if (cp_algo != "colossalai_cp" && values.count("context_parallel") && run.model.params.Int("context_parallel") > 1 &&
      !p.enable_alltoall)
    Warn(
        fmt::format("{}: context_parallel_algo {} without parallel.enable_alltoall: the Ulysses exchange runs as "
                    "AllGather and a local slice, as MindSpore redistributes by default (MindFormers sets "
                    "enable_alltoall for it)",
                    root.file(), cp_algo));
  if (values.count("data_parallel") && values.count("model_parallel")) {
    const int64_t dp = run.model.params.Int("data_parallel"), mp = run.model.params.Int("model_parallel");
    const int64_t cp = values.count("context_parallel") ? run.model.params.Int("context_parallel") : 1;
    if (dp * mp * cp > 1 && p.devices_per_stage() % (dp * mp * cp) != 0)
      root.Child("model_params")
          .Fail(fmt::format(
              "{} = {} does not divide the {} devices of a pipeline stage",
              cp > 1 ? "data_parallel x model_parallel x context_parallel" : "data_parallel x model_parallel",
              dp * mp * cp, p.devices_per_stage()));
    if (cp > 1 && p.micro_batch_interleaved > 1)
      parallel_node.Child("micro_batch_interleaved")
          .Fail(fmt::format("micro_batch_interleaved {} splits each device's share of a micro-batch, which under "
                            "context_parallel {} is a chunk of each of its sequences, not whole samples",
                            p.micro_batch_interleaved, cp));
    if (p.micro_batch_size() % dp != 0)
      parallel_node.Child("global_batch_size")
          .Fail(fmt::format("a micro-batch of {} samples cannot be split over data_parallel {}", p.micro_batch_size(),
                            dp));
  }
  if (!ForwardBackwardOverlap(run).empty()) {
    const auto [key, what] = OverlapKey(run, root);
    if (!run.simulation.training())
      key.Fail(fmt::format("{} pairs forwards with backwards, which an inference step has none of", what));
    if (run.simulation.pipeline_schedule == PipelineSchedule::kGPipe)
      key.Fail(
          fmt::format("{} pairs a forward with a backward in the schedule's steady state, which gpipe has "
                      "none of: use 1f1b, interleaved, zero_bubble_h1, zero_bubble_v or dualpipe",
                      what));
    if (p.cpu_offloading_num_layers > 0)
      key.Fail(fmt::format("{} is not built with activation offloading (cpu_offloading_num_layers)", what));
    if (p.enable_parallel_optimizer && p.parallel_optimizer_config.optimizer_level == OptimizerLevel::kLevel3)
      key.Fail(
          fmt::format("{} is not built with optimizer_level level3: its weight gathers run on a stream "
                      "of their own beside each pass",
                      what));
  }
}

// MindSpore's sequence-pipelined schedulers and MindFormers' seq_split_num,
// with their rules (SeqvppScheduler::ComputeCycleList).
void CheckSequenceChunks(const RunSpec& run, const JsonNode& root, const JsonNode& parallel_node) {
  const PipelineSchedule schedule = run.simulation.pipeline_schedule;
  const int64_t n = SequenceChunks(run.model);
  if (!RunsSequenceChunks(schedule)) {
    if (n > 1)
      root.Child("model_params")
          .Child("seq_split_num")
          .Fail(fmt::format("seq_split_num {} runs each sequence in chunks, which only the pipeline schedules "
                            "seqpipe, seqvpp and seqsmartvpp do (MindSpore's pipeline_scheduler)",
                            n));
    return;
  }
  if (!ForwardBackwardOverlap(run).empty()) {
    const auto [key, what] = OverlapKey(run, root);
    key.Fail(fmt::format("{} is not built with pipeline_schedule \"{}\"", what, ToString(schedule)));
  }
  if (schedule == PipelineSchedule::kSeqPipe) return;
  const JsonNode schedule_node = run.parallel.pipeline_config ? parallel_node.Child("pipeline_config")
                                                              : root.Child("simulation").Child("pipeline_schedule");
  const int64_t stages = run.parallel.pipeline_stages, micro_batches = run.parallel.micro_batch_num;
  if (run.simulation.virtual_pipeline_chunks < 2)
    schedule_node.Fail(fmt::format(
        "pipeline_schedule \"{}\" runs the model in chunks: set simulation.virtual_pipeline_chunks (MindFormers' "
        "pp_interleave_num) to 2 or more",
        ToString(schedule)));
  if (stages < n || micro_batches * n < stages)
    schedule_node.Fail(
        fmt::format("pipeline_schedule \"{}\" needs pipeline_stages >= seq_split_num and "
                    "micro_batch_num x seq_split_num >= pipeline_stages (MindSpore's rule); here {} "
                    "stages, {} micro-batches, seq_split_num {}",
                    ToString(schedule), stages, micro_batches, n));
}

}  // namespace

RunSpec LoadRunFile(const std::string& path) {
  const nlohmann::json document = ReadJsonFile(path);
  return ReadRunSpec(JsonNode(document, path));
}

namespace {

template <typename Json>
void SetKey(Json& document, const std::string& key, const Json& value) {
  if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
    throw std::invalid_argument(
        "expected a key of the run file, dotted for nested keys (such as "
        "parallel.micro_batch_num), got " +
        Quoted(key));
  Json* node = &document;
  size_t begin = 0;
  while (true) {
    const size_t dot = key.find('.', begin);
    const std::string part = key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (!node->is_object() && !node->is_null())
      throw std::invalid_argument(fmt::format("the run file's {} is {}, not an object with the key {}",
                                              Quoted(key.substr(0, begin - 1)),
                                              JsonNode(nlohmann::json(*node), "").Describe(), Quoted(part)));
    if (dot == std::string::npos) {
      (*node)[part] = value;
      return;
    }
    node = &(*node)[part];
    begin = dot + 1;
  }
}

template <typename Json>
void Apply(Json& document, const std::vector<std::string>& settings) {
  for (const std::string& setting : settings) {
    const size_t equals = setting.find('=');
    if (equals == std::string::npos)
      throw std::invalid_argument("--set " + Quoted(setting) +
                                  ": expected KEY=VALUE, such as parallel.micro_batch_num=64");
    const std::string key = setting.substr(0, equals), text = setting.substr(equals + 1);
    Json value = Json::parse(text, nullptr, false);
    if (value.is_discarded()) value = text;  // a bare word is a string
    try {
      SetKey(document, key, value);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("--set " + Quoted(setting) + ": " + e.what());
    }
  }
}

}  // namespace

void SetDottedKey(nlohmann::json& document, const std::string& key, const nlohmann::json& value) {
  SetKey(document, key, value);
}

void ApplySettings(nlohmann::json& document, const std::vector<std::string>& settings) { Apply(document, settings); }

void ApplySettings(nlohmann::ordered_json& document, const std::vector<std::string>& settings) {
  Apply(document, settings);
}

RunSpec LoadRunFile(const std::string& path, const std::vector<std::string>& settings) {
  if (settings.empty()) return LoadRunFile(path);
  nlohmann::json document = ReadJsonFile(path);
  if (!document.is_object()) return ReadRunSpec(JsonNode(document, path));  // its own error
  ApplySettings(document, settings);
  return ReadRunSpec(JsonNode(document, path));
}

RunSpec ReadRunSpec(const JsonNode& node) {
  ObjectReader r(node);
  RunSpec run;
  run.file = node.file();
  run.name = r.Required("name").AsString();

  const auto cluster_node = r.Required("cluster");
  const Section cluster = OpenSection(cluster_node);
  run.cluster_file = cluster.file;
  run.cluster = ReadClusterSpec(cluster.file.empty() ? cluster_node : JsonNode(cluster.document, cluster.file));

  const auto model_node = r.Required("model");
  const Section model = OpenSection(model_node);
  run.model_file = model.file;
  run.model = ReadModelSpec(model.file.empty() ? model_node : JsonNode(model.document, model.file));

  const auto parallel_node = r.Required("parallel");
  run.parallel = ReadParallelConfig(parallel_node, run.cluster.device_count());
  if (auto params = r.Optional("model_params")) {
    if (params->json().is_object() && params->json().contains("batch"))
      params->Child("batch").Fail("the batch comes from the run: global_batch_size / micro_batch_num");
    ApplyModelParams(run.model, *params);
  }
  // MindSpore's parallel.pipeline_config names the schedule simulation.pipeline_schedule leaves out.
  SimulationOptions simulation_defaults;
  if (run.parallel.pipeline_config) simulation_defaults.pipeline_schedule = *run.parallel.pipeline_config;
  if (simulation_defaults.pipeline_schedule == PipelineSchedule::kZeroBubbleV)
    simulation_defaults.virtual_pipeline_chunks = 2;
  if (auto simulation = r.Optional("simulation")) {
    if (run.parallel.pipeline_config && simulation->json().is_object() &&
        simulation->json().contains("pipeline_schedule") && simulation->json()["pipeline_schedule"].is_string() &&
        simulation->json()["pipeline_schedule"] != ToString(*run.parallel.pipeline_config))
      simulation->Child("pipeline_schedule")
          .Fail(fmt::format("parallel.pipeline_config names the schedule \"{}\": give one of the two, or the same",
                            ToString(*run.parallel.pipeline_config)));
    run.simulation = ReadSimulation(*simulation, simulation_defaults);
  } else {
    run.simulation = simulation_defaults;
  }
  if (run.simulation.pipeline_schedule == PipelineSchedule::kInterleaved && run.simulation.virtual_pipeline_chunks < 2)
    parallel_node.Child("pipeline_config")
        .Fail(
            "pipeline_interleave runs the model in chunks: set simulation.virtual_pipeline_chunks (MindFormers' "
            "pp_interleave_num) to 2 or more");
  if (run.simulation.pipeline_schedule == PipelineSchedule::kZeroBubbleV &&
      (run.parallel.pipeline_stages < 2 || run.parallel.micro_batch_num < 2 * run.parallel.pipeline_stages))
    parallel_node.Child(run.parallel.pipeline_stages < 2 ? "pipeline_stages" : "micro_batch_num")
        .Fail(fmt::format("the zero_bubble_v schedule needs at least 2 pipeline stages and micro_batch_num >= 2 x "
                          "pipeline_stages (MindSpore's rule); here {} stages and {} micro-batches",
                          run.parallel.pipeline_stages, run.parallel.micro_batch_num));
  if (run.simulation.pipeline_schedule == PipelineSchedule::kDualPipe) {
    const int64_t stages = run.parallel.pipeline_stages, micro_batches = run.parallel.micro_batch_num;
    if (stages < 2 || stages % 2 != 0)
      parallel_node.Child("pipeline_stages")
          .Fail(fmt::format("the dualpipe schedule pairs stage s with stage S - 1 - s, so it needs an even number of "
                            "pipeline stages, 2 or more; here {}",
                            stages));
    if (micro_batches % 2 != 0 || micro_batches < 2 * stages)
      parallel_node.Child("micro_batch_num")
          .Fail(fmt::format("the dualpipe schedule feeds half the micro-batches from each end, so it needs an even "
                            "micro_batch_num of at least 2 x pipeline_stages (DualPipe's rule); here {} micro-batches "
                            "over {} stages",
                            micro_batches, stages));
  }
  if (auto stack = r.Optional("stack")) run.stack = ReadSoftwareStack(*stack);
  if (auto ascend = r.Optional("ascend_config")) {
    run.ascend_config = ReadAscendConfig(*ascend);
    if (!run.ascend_config.pp_1f1b_overlap.empty() && !run.simulation.overlap_forward_backward.empty())
      ascend->Fail(
          "pp_1f1b_overlap and simulation.overlap_forward_backward both pair forwards with backwards: give one of "
          "the two");
  }
  CheckSequenceChunks(run, node, parallel_node);
  r.Finish();
  if (!run.model.builder.empty()) run.model.params.Set("batch", run.parallel.micro_batch_size());
  CheckRun(run, node, parallel_node);
  return run;
}

PassOverlap ForwardBackwardOverlap(const RunSpec& run) {
  if (run.ascend_config.pp_1f1b_overlap.empty()) return {run.simulation.overlap_forward_backward, {}};
  PassOverlap overlap;
  for (int d = 0; d < kCommDimensions; ++d) overlap.dimensions.push_back(static_cast<CommDimension>(d));
  overlap.collectives = run.ascend_config.Pp1f1bOverlapCollectives();
  return overlap;
}

Graph BuildRunGraph(const RunSpec& run) {
  BuildOptions options;
  options.pipeline_stages = run.parallel.pipeline_stages;
  options.recompute = run.parallel.recompute;
  options.select_recompute = run.parallel.select_recompute;
  options.recompute_modules = run.parallel.recompute_modules;
  options.head_on_first_stage = run.simulation.pipeline_schedule == PipelineSchedule::kZeroBubbleV;
  options.offload_layers = run.parallel.cpu_offloading_num_layers;
  const nlohmann::json empty = nlohmann::json::object();
  Graph graph = BuildModelGraph(run.model, options, JsonNode(empty, run.file, "/model"));
  // A split index past the last gradient splits nothing: a config written for another model.
  const auto gradients = static_cast<int64_t>(graph.Parameters().size());
  const FusionSetting& allreduce = run.parallel.comm_fusion.allreduce;
  if (allreduce.mode == FusionSetting::Mode::kIndex && allreduce.indices.back() >= gradients - 1)
    JsonNode(empty, run.file, "/parallel")
        .Fail(fmt::format("the AllReduce fusion split index {} (all_reduce_fusion_config or comm_fusion) is not "
                          "below the last of model \"{}\"'s {} gradients: index i ends a bucket after gradient i, "
                          "so the indices must be below {}",
                          allreduce.indices.back(), run.model.name, gradients, gradients - 1));
  if (run.parallel.cpu_offloading_num_layers > 0 &&
      std::none_of(graph.operators().begin(), graph.operators().end(),
                   [](const Operator& op) { return op.offload_activations; }))
    JsonNode(empty, run.file, "/parallel/cpu_offloading_num_layers")
        .Fail(fmt::format("model \"{}\" (builder {}) has no repeated transformer layers to offload: "
                          "cpu_offloading_num_layers is built for the gpt and bert builders",
                          run.model.name, run.model.builder));
  return graph;
}

nlohmann::json ToJson(const RunSpec& run) {
  nlohmann::json model = ToJson(run.model);
  nlohmann::json j = {{"name", run.name},
                      {"cluster", ToJson(run.cluster)},
                      {"model", model},
                      {"parallel", ToJson(run.parallel)},
                      {"simulation", ToJson(run.simulation)},
                      {"stack", ToJson(run.stack)}};
  if (!run.ascend_config.pp_1f1b_overlap.empty()) j["ascend_config"] = ToJson(run.ascend_config);
  return j;
}

}  // namespace shardlab
