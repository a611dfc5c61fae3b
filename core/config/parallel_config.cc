#include "core/config/parallel_config.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/config/units.h"
#include "core/util/enum_names.h"
#include "core/util/json_reader.h"
#include "core/util/paths.h"
#include "core/util/quote.h"
#include "core/util/warning.h"

namespace shardlab {
namespace {

const std::vector<std::string> kParallelModes = {"stand_alone", "data_parallel", "semi_auto_parallel", "auto_parallel",
                                                 "hybrid_parallel"};
const std::vector<std::string> kSearchModes = {"dynamic_programming", "recursive_programming", "sharding_propagation"};
// shardlab simulates clusters of up to 131,072 devices; MindSpore's
// set_auto_parallel_context accepts device_num up to 4096 (warned above that).
constexpr int64_t kMaxDevices = 131072;
constexpr EnumNames<OptimizerLevel, 3> kOptimizerLevels({"level1", "level2", "level3"});
constexpr int64_t kMindSporeMaxDevices = 4096;

// all_reduce_fusion_config and comm_fusion's index config: a non-empty list of
// strictly increasing positive integers (MindSpore rejects bools, duplicates
// and unsorted lists; index 0 would make an empty first bucket).
std::vector<int64_t> ReadSplitIndices(const JsonNode& node) {
  const auto items = node.AsArray();
  if (items.empty()) node.Fail("expected a non-empty list of split indices (inclusive bucket ends)");
  std::vector<int64_t> indices;
  for (const auto& item : items) {
    const int64_t index = item.AsInt(1, INT32_MAX);
    if (!indices.empty() && index <= indices.back())
      item.Fail(fmt::format("split indices must be strictly increasing: {} follows {}", index, indices.back()));
    indices.push_back(index);
  }
  return indices;
}

FusionSetting ReadFusionSetting(const JsonNode& node, const std::vector<std::string>& modes) {
  ObjectReader entry(node);
  // MindSpore raises KeyError unless both "mode" and "config" are present.
  const auto mode_node = entry.Required("mode");
  const auto config = entry.Required("config");
  entry.Finish();
  FusionSetting setting;
  const std::string mode = mode_node.AsEnum(modes);
  if (mode == "auto") {
    if (!config.json().is_null()) config.Fail("mode \"auto\" takes no config: expected null, got " + config.Describe());
    setting.mode = FusionSetting::Mode::kAuto;
    setting.size_mb = 64;
  } else if (mode == "size") {
    setting.mode = FusionSetting::Mode::kSize;
    setting.size_mb = config.AsInt(0, 1 << 30);
  } else {
    setting.mode = FusionSetting::Mode::kIndex;
    setting.indices = ReadSplitIndices(config);
  }
  return setting;
}

CommFusion ReadCommFusion(const JsonNode& node) {
  ObjectReader reader(node);
  CommFusion fusion;
  fusion.openstate = reader.Bool("openstate", true);
  if (auto v = reader.Optional("allreduce")) fusion.allreduce = ReadFusionSetting(*v, {"auto", "size", "index"});
  if (auto v = reader.Optional("allgather")) fusion.allgather = ReadFusionSetting(*v, {"auto", "size"});
  if (auto v = reader.Optional("reducescatter")) fusion.reducescatter = ReadFusionSetting(*v, {"auto", "size"});
  reader.Finish();
  return fusion;
}

ParallelOptimizerConfig ReadParallelOptimizerConfig(const JsonNode& node) {
  ObjectReader reader(node);
  ParallelOptimizerConfig config;
  config.optimizer_level =
      kOptimizerLevels.Parse(reader.Enum("optimizer_level", "level1", kOptimizerLevels.All()), "optimizer_level");
  config.gradient_accumulation_shard = reader.Bool("gradient_accumulation_shard", true);
  config.parallel_optimizer_threshold = reader.Int("parallel_optimizer_threshold", 64, 0, INT32_MAX);
  config.optimizer_weight_shard_size = reader.Int("optimizer_weight_shard_size", -1, -1, kMaxDevices);
  if (config.optimizer_weight_shard_size == 0)
    node.Child("optimizer_weight_shard_size")
        .Fail("expected -1 (shard over the whole data-parallel group) or a group size of 1 or more, got 0");
  reader.Finish();
  return config;
}

DatasetStrategy ReadDatasetStrategy(const JsonNode& node) {
  DatasetStrategy strategy;
  if (node.json().is_string()) {
    strategy.kind = node.AsEnum({"data_parallel", "full_batch"}) == "full_batch" ? DatasetStrategy::Kind::kFullBatch
                                                                                 : DatasetStrategy::Kind::kDataParallel;
    return strategy;
  }
  if (!node.json().is_array())
    node.Fail("expected \"data_parallel\", \"full_batch\" or a list of per-input strategies, got " + node.Describe());
  strategy.kind = DatasetStrategy::Kind::kShard;
  const auto inputs = node.AsArray();
  if (inputs.empty()) node.Fail("expected at least one per-input strategy");
  for (const auto& input : inputs) {
    if (!input.json().is_array() || input.json().empty())
      input.Fail("expected a non-empty list of slice counts, got " + input.Describe());
    strategy.shard.push_back(input.AsIntList(1, kMaxDevices));
  }
  return strategy;
}

// MindSpore's pipeline_config (set_auto_parallel_context, AutoParallel.pipeline):
// both keys given, as MindSpore reads them. Schedulers: "1f1b", "gpipe"
// (MindSpore 2.4), "seqpipe" (2.5), "seqvpp", "seqsmartvpp" (2.6),
// "zero_bubble_v" (2.7); every one but "1f1b" needs pipeline_interleave.
// "1f1b" with pipeline_interleave is the interleaved (virtual pipeline)
// 1F1B over the model's chunks (simulation.virtual_pipeline_chunks,
// MindFormers' pp_interleave_num).
PipelineSchedule ReadPipelineConfig(const JsonNode& node) {
  ObjectReader r(node);
  const bool interleave = r.Required("pipeline_interleave").AsBool();
  const JsonNode scheduler_node = r.Required("pipeline_scheduler");
  const std::string scheduler =
      scheduler_node.AsEnum({"1f1b", "gpipe", "seqpipe", "seqvpp", "seqsmartvpp", "zero_bubble_v"});
  r.Finish();
  if (!interleave && scheduler != "1f1b")
    scheduler_node.Fail(
        fmt::format("MindSpore runs pipeline_scheduler \"{}\" only with pipeline_interleave true", scheduler));
  if (scheduler == "1f1b") return interleave ? PipelineSchedule::kInterleaved : PipelineSchedule::k1F1B;
  if (scheduler == "gpipe") return PipelineSchedule::kGPipe;
  if (scheduler == "zero_bubble_v") return PipelineSchedule::kZeroBubbleV;
  if (scheduler == "seqpipe") return PipelineSchedule::kSeqPipe;
  if (scheduler == "seqvpp") return PipelineSchedule::kSeqVpp;
  return PipelineSchedule::kSeqSmartVpp;
}

}  // namespace

const char* ToString(ParallelMode mode) { return kParallelModes[static_cast<int>(mode)].c_str(); }
const char* ToString(SearchMode mode) { return kSearchModes[static_cast<int>(mode)].c_str(); }
const char* ToString(OptimizerLevel level) { return kOptimizerLevels[level]; }

SearchMode ParseSearchMode(const std::string& name) {
  const auto it = std::find(kSearchModes.begin(), kSearchModes.end(), name);
  if (it == kSearchModes.end())
    throw std::runtime_error("unknown search mode " + Quoted(name) +
                             " (dynamic_programming, recursive_programming or sharding_propagation)");
  return static_cast<SearchMode>(it - kSearchModes.begin());
}

const char* ToString(FusionSetting::Mode mode) {
  switch (mode) {
    case FusionSetting::Mode::kDefault:
      return "default";
    case FusionSetting::Mode::kAuto:
      return "auto";
    case FusionSetting::Mode::kSize:
      return "size";
    case FusionSetting::Mode::kIndex:
      return "index";
  }
  return "";
}

ParallelConfig ReadParallelConfig(const JsonNode& node, int64_t world_size) {
  ObjectReader reader(node);
  ParallelConfig c;
  c.parallel_mode = static_cast<ParallelMode>(std::find(kParallelModes.begin(), kParallelModes.end(),
                                                        reader.Enum("parallel_mode", "stand_alone", kParallelModes)) -
                                              kParallelModes.begin());
  const bool device_num_set = reader.Has("device_num");
  // MindSpore takes device_num from the communication group when unset; a
  // stand_alone run has a group of one.
  const int64_t default_devices = c.parallel_mode == ParallelMode::kStandAlone ? 1 : world_size;
  c.device_num = reader.Int("device_num", default_devices, 1, kMaxDevices);
  if (c.device_num > kMindSporeMaxDevices)
    Warn(fmt::format(
        "{}: {}: device_num {} is past MindSpore's limit of {}; shardlab simulates it as if "
        "MindSpore accepted it",
        node.file(), (device_num_set ? node.Child("device_num") : node).pointer(), c.device_num, kMindSporeMaxDevices));
  c.global_rank = reader.Int("global_rank", 0, 0, kMaxDevices - 1);
  c.gradients_mean = reader.Bool("gradients_mean", false);
  c.gradient_fp32_sync = reader.Bool("gradient_fp32_sync", true);
  c.force_fp32_communication = reader.Bool("force_fp32_communication", false);
  // auto_parallel_search_mode is MindSpore's deprecated name of search_mode.
  if (const auto alias = reader.Optional("auto_parallel_search_mode")) {
    if (reader.Has("search_mode")) alias->Fail("set search_mode or its deprecated alias, not both");
    c.search_mode = ParseSearchMode(alias->AsEnum(kSearchModes));
    Warn(node.file() + ": " + alias->pointer() +
         ": auto_parallel_search_mode is deprecated and will be removed in a future version; use search_mode");
  } else {
    c.search_mode = ParseSearchMode(reader.Enum("search_mode", "dynamic_programming", kSearchModes));
  }
  const auto fusion_indices = reader.Optional("all_reduce_fusion_config");
  if (auto v = reader.Optional("comm_fusion")) c.comm_fusion = ReadCommFusion(*v);
  if (fusion_indices) {
    if (c.comm_fusion.allreduce.mode != FusionSetting::Mode::kDefault)
      fusion_indices->Fail("set either all_reduce_fusion_config or comm_fusion.allreduce, not both");
    c.comm_fusion.allreduce.mode = FusionSetting::Mode::kIndex;
    c.comm_fusion.allreduce.indices = ReadSplitIndices(*fusion_indices);
  }
  c.enable_parallel_optimizer = reader.Bool("enable_parallel_optimizer", false);
  if (auto v = reader.Optional("parallel_optimizer_config"))
    c.parallel_optimizer_config = ReadParallelOptimizerConfig(*v);
  c.parameter_broadcast = reader.Bool("parameter_broadcast", false);
  c.pipeline_stages = reader.Int("pipeline_stages", 1, 1, kMaxDevices);
  if (auto v = reader.Optional("pipeline_config")) c.pipeline_config = ReadPipelineConfig(*v);
  c.full_batch = reader.Bool("full_batch", false);
  const auto dataset = reader.Optional("dataset_strategy");
  if (dataset) c.dataset_strategy = ReadDatasetStrategy(*dataset);
  c.strategy_ckpt_load_file = ResolveRelativeTo(node.file(), reader.String("strategy_ckpt_load_file", ""));
  c.strategy_ckpt_save_file = ResolveRelativeTo(node.file(), reader.String("strategy_ckpt_save_file", ""));
  c.micro_batch_num = reader.Int("micro_batch_num", 1, 1, 1 << 20);
  c.micro_batch_interleaved = reader.Int("micro_batch_interleaved", 1, 1, 16);
  c.global_batch_size = reader.RequiredInt("global_batch_size", 1, int64_t{1} << 40);
  c.recompute = reader.Bool("recompute", false);
  c.select_recompute = reader.Bool("select_recompute", false);
  if (auto modules = reader.Optional("recompute_modules")) {
    if (!modules->json().is_array())
      modules->Fail("expected a list of module names (" + fmt::format("{}", fmt::join(RecomputeModuleNames(), ", ")) +
                    ")");
    for (const JsonNode& element : modules->AsArray()) {
      const RecomputeModule m = ParseRecomputeModule(element.AsEnum(RecomputeModuleNames()));
      if (std::find(c.recompute_modules.begin(), c.recompute_modules.end(), m) != c.recompute_modules.end())
        element.Fail(std::string("module \"") + ToString(m) + "\" is listed twice");
      c.recompute_modules.push_back(m);
    }
  }
  c.cpu_offloading_num_layers = reader.Int("cpu_offloading_num_layers", 0, 0, 1 << 20);
  c.fully_use_devices = reader.Bool("fully_use_devices", true);
  c.enable_alltoall = reader.Bool("enable_alltoall", false);
  if (auto v = reader.Optional("cost_model")) {
    ObjectReader m(*v);
    c.cost_model.model = m.Enum("model", "mindspore", {"mindspore", "time"});
    c.cost_model.alpha = m.Number("alpha", 1.0, 0, 1e12);
    c.cost_model.beta = m.Number("beta", 0, 0, 1e12);
    c.cost_model.gamma = m.Number("gamma", 0.001, 0, 1);
    if (auto cap = m.Optional("device_memory_capacity"))
      c.cost_model.device_memory_capacity = ReadQuantity(*cap, Quantity::kBytes);
    m.Finish();
  }
  reader.Finish();

  // Rules that tie keys together. Each error points at the key to change.
  const bool is_semi_or_auto =
      c.parallel_mode == ParallelMode::kSemiAutoParallel || c.parallel_mode == ParallelMode::kAutoParallel;
  if (c.parallel_mode == ParallelMode::kStandAlone && c.device_num != 1) {
    const auto where = device_num_set ? node.Child("device_num") : node;
    where.Fail(
        fmt::format("parallel_mode \"stand_alone\" runs on one device but device_num is {}; "
                    "set device_num to 1 or choose a parallel parallel_mode",
                    c.device_num));
  }
  if (c.global_rank >= c.device_num)
    node.Child("global_rank")
        .Fail(fmt::format("global_rank {} is not below device_num {}", c.global_rank, c.device_num));
  if (c.device_num % c.pipeline_stages != 0)
    node.Child("pipeline_stages")
        .Fail(fmt::format("device_num {} is not divisible by pipeline_stages {}", c.device_num, c.pipeline_stages));
  if (c.pipeline_stages > 1 && !is_semi_or_auto)
    node.Child("pipeline_stages")
        .Fail("pipeline parallel needs parallel_mode \"semi_auto_parallel\" or \"auto_parallel\"");
  if (c.pipeline_stages > 1 && c.micro_batch_num < c.pipeline_stages)
    node.Child(reader.Has("micro_batch_num") ? "micro_batch_num" : "pipeline_stages")
        .Fail(fmt::format("micro_batch_num {} must be at least pipeline_stages {}", c.micro_batch_num,
                          c.pipeline_stages));
  if (c.global_batch_size % c.micro_batch_num != 0)
    node.Child("global_batch_size")
        .Fail(fmt::format("global_batch_size {} is not divisible by micro_batch_num {}", c.global_batch_size,
                          c.micro_batch_num));
  if (c.micro_batch_size() % c.micro_batch_interleaved != 0)
    node.Child("micro_batch_interleaved")
        .Fail(fmt::format("a micro-batch of {} samples cannot be split into {} interleaved slices",
                          c.micro_batch_size(), c.micro_batch_interleaved));
  if (dataset && c.full_batch)
    dataset->Fail("full_batch and dataset_strategy cannot be used together; keep dataset_strategy");
  // full_batch and dataset_strategy "full_batch" mean the same; keep both views in step.
  if (c.full_batch) c.dataset_strategy.kind = DatasetStrategy::Kind::kFullBatch;
  c.full_batch = c.dataset_strategy.kind == DatasetStrategy::Kind::kFullBatch;
  if (c.dataset_strategy.kind == DatasetStrategy::Kind::kShard && !is_semi_or_auto)
    dataset->Fail(
        "a dataset_strategy of per-input slices needs parallel_mode \"semi_auto_parallel\" or \"auto_parallel\"");
  if (c.parallel_mode == ParallelMode::kDataParallel &&
      c.dataset_strategy.kind == DatasetStrategy::Kind::kDataParallel && c.micro_batch_size() % c.device_num != 0)
    node.Child("global_batch_size")
        .Fail(fmt::format("data_parallel splits each batch of {} samples over {} devices: not divisible",
                          c.micro_batch_size(), c.device_num));
  return c;
}

nlohmann::json ToJson(const ParallelConfig& c) {
  nlohmann::json j;
  j["parallel_mode"] = ToString(c.parallel_mode);
  j["device_num"] = c.device_num;
  j["global_rank"] = c.global_rank;
  j["gradients_mean"] = c.gradients_mean;
  j["gradient_fp32_sync"] = c.gradient_fp32_sync;
  j["force_fp32_communication"] = c.force_fp32_communication;
  j["search_mode"] = ToString(c.search_mode);
  nlohmann::json fusion = {{"openstate", c.comm_fusion.openstate}};
  const auto put = [&fusion](const char* key, const FusionSetting& s) {
    switch (s.mode) {
      case FusionSetting::Mode::kDefault:
        break;
      case FusionSetting::Mode::kAuto:
        fusion[key] = {{"mode", "auto"}, {"config", nullptr}};
        break;
      case FusionSetting::Mode::kSize:
        fusion[key] = {{"mode", "size"}, {"config", s.size_mb}};
        break;
      case FusionSetting::Mode::kIndex:
        fusion[key] = {{"mode", "index"}, {"config", s.indices}};
        break;
    }
  };
  put("allreduce", c.comm_fusion.allreduce);
  put("allgather", c.comm_fusion.allgather);
  put("reducescatter", c.comm_fusion.reducescatter);
  j["comm_fusion"] = fusion;
  j["enable_parallel_optimizer"] = c.enable_parallel_optimizer;
  j["parallel_optimizer_config"] = {
      {"optimizer_level", ToString(c.parallel_optimizer_config.optimizer_level)},
      {"gradient_accumulation_shard", c.parallel_optimizer_config.gradient_accumulation_shard},
      {"parallel_optimizer_threshold", c.parallel_optimizer_config.parallel_optimizer_threshold},
      {"optimizer_weight_shard_size", c.parallel_optimizer_config.optimizer_weight_shard_size}};
  j["parameter_broadcast"] = c.parameter_broadcast;
  j["pipeline_stages"] = c.pipeline_stages;
  switch (c.dataset_strategy.kind) {
    case DatasetStrategy::Kind::kDataParallel:
      j["dataset_strategy"] = "data_parallel";
      break;
    case DatasetStrategy::Kind::kFullBatch:
      j["dataset_strategy"] = "full_batch";
      break;
    case DatasetStrategy::Kind::kShard:
      j["dataset_strategy"] = c.dataset_strategy.shard;
      break;
  }
  if (!c.strategy_ckpt_load_file.empty()) j["strategy_ckpt_load_file"] = c.strategy_ckpt_load_file;
  if (!c.strategy_ckpt_save_file.empty()) j["strategy_ckpt_save_file"] = c.strategy_ckpt_save_file;
  j["micro_batch_num"] = c.micro_batch_num;
  j["micro_batch_interleaved"] = c.micro_batch_interleaved;
  j["global_batch_size"] = c.global_batch_size;
  j["recompute"] = c.recompute;
  j["select_recompute"] = c.select_recompute;
  if (!c.recompute_modules.empty()) {
    j["recompute_modules"] = nlohmann::json::array();
    for (RecomputeModule m : c.recompute_modules) j["recompute_modules"].push_back(ToString(m));
  }
  if (c.cpu_offloading_num_layers > 0) j["cpu_offloading_num_layers"] = c.cpu_offloading_num_layers;
  j["fully_use_devices"] = c.fully_use_devices;
  j["enable_alltoall"] = c.enable_alltoall;
  j["cost_model"] = {{"model", c.cost_model.model},
                     {"alpha", c.cost_model.alpha},
                     {"beta", c.cost_model.beta},
                     {"gamma", c.cost_model.gamma}};
  if (c.cost_model.device_memory_capacity > 0)
    j["cost_model"]["device_memory_capacity"] = c.cost_model.device_memory_capacity;
  return j;
}

}  // namespace shardlab
