// MindSpore's parallel settings (`set_auto_parallel_context` and
// `set_algo_parameters`), with MindSpore's key names, defaults and rules, plus
// the step-shape keys shardlab needs (micro_batch_num, global_batch_size,
// recompute).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/config/simulation_options.h"
#include "core/graph/builders/model_builder.h"

namespace shardlab {

class JsonNode;

enum class ParallelMode { kStandAlone, kDataParallel, kSemiAutoParallel, kAutoParallel, kHybridParallel };
enum class SearchMode { kDynamicProgramming, kRecursiveProgramming, kShardingPropagation };

const char* ToString(ParallelMode mode);
const char* ToString(SearchMode mode);
// "recursive_programming" -> kRecursiveProgramming; throws std::invalid_argument for other names.
SearchMode ParseSearchMode(const std::string& name);

// How gradients of one communication type are fused into buckets.
struct FusionSetting {
  enum class Mode {
    kDefault,  // nothing configured: MindSpore fuses every gradient into one bucket
    kAuto,     // "auto": 64 MB threshold
    kSize,     // "size": threshold of `size_mb` MB
    kIndex,    // "index" / all_reduce_fusion_config: inclusive split indices
  };
  Mode mode = Mode::kDefault;
  int64_t size_mb = 64;
  std::vector<int64_t> indices;

  bool operator==(const FusionSetting&) const = default;
};

const char* ToString(FusionSetting::Mode mode);

struct CommFusion {
  bool openstate = true;  // false: no AllReduce/AllGather/ReduceScatter fusion at all
  FusionSetting allreduce;
  FusionSetting allgather;
  FusionSetting reducescatter;

  bool operator==(const CommFusion&) const = default;
};

// How much of a parameter's training state the parallel optimizer shards
// over the parameter's repeated (data-parallel) group: MindSpore's
// parallel_optimizer_config "optimizer_level", ZeRO stages 1-3.
enum class OptimizerLevel {
  kLevel1,  // optimizer states; the weight is gathered once per step and kept ("level1")
  kLevel2,  // + gradients, reduce-scattered after every micro-batch ("level2")
  kLevel3,  // + weights: gathered just before each forward and backward use, then freed ("level3")
};

const char* ToString(OptimizerLevel level);

struct ParallelOptimizerConfig {
  OptimizerLevel optimizer_level = OptimizerLevel::kLevel1;
  bool gradient_accumulation_shard = true;
  int64_t parallel_optimizer_threshold = 64;  // KB: smaller parameters stay unsharded
  int64_t optimizer_weight_shard_size = -1;   // -1: shard across the whole repeated group

  bool operator==(const ParallelOptimizerConfig&) const = default;
};

struct DatasetStrategy {
  enum class Kind { kDataParallel, kFullBatch, kShard };
  Kind kind = Kind::kDataParallel;
  std::vector<std::vector<int64_t>> shard;  // one tuple per dataset input when kShard

  bool operator==(const DatasetStrategy&) const = default;
};

struct ParallelConfig {
  ParallelMode parallel_mode = ParallelMode::kStandAlone;
  int64_t device_num = 1;
  int64_t global_rank = 0;
  bool gradients_mean = false;
  bool gradient_fp32_sync = true;
  // Reductions (AllReduce, ReduceScatter) of 16-bit tensors carry fp32 on
  // the wire, operator-level ones and gradients alike (MindSpore 2.3+).
  bool force_fp32_communication = false;
  SearchMode search_mode = SearchMode::kDynamicProgramming;
  CommFusion comm_fusion;  // all_reduce_fusion_config lands in comm_fusion.allreduce (index mode)
  bool enable_parallel_optimizer = false;
  ParallelOptimizerConfig parallel_optimizer_config;
  bool parameter_broadcast = false;
  int64_t pipeline_stages = 1;
  // MindSpore's pipeline_config ({"pipeline_interleave": bool,
  // "pipeline_scheduler": "1f1b" | "gpipe" | ...}), when the run gives it:
  // the schedule it names. Read only; the run's schedule is
  // simulation.pipeline_schedule, which it sets (ReadRun).
  std::optional<PipelineSchedule> pipeline_config;
  bool full_batch = false;
  DatasetStrategy dataset_strategy;
  std::string strategy_ckpt_load_file;  // resolved against the run file's folder
  std::string strategy_ckpt_save_file;
  int64_t micro_batch_num = 1;
  // nn.MicroBatchInterleaved(net, interleave_num): each micro-batch runs as
  // this many interleaved slices so one slice's model-parallel communication
  // overlaps the next slice's compute. 1 = off.
  int64_t micro_batch_interleaved = 1;
  int64_t global_batch_size = 0;
  bool recompute = false;
  // MindFormers' recompute_config select_recompute (Megatron's selective
  // activation recomputation): only the attention core (scores, mask,
  // softmax, dropout, context) is recomputed, so its [seq, seq] tensors are
  // not kept. Nothing to do for flash attention, which keeps none.
  bool select_recompute = false;
  // Megatron's --recompute-modules (with --recompute-granularity selective):
  // the parts of each repeated layer recomputed before the backward. Empty: none.
  std::vector<RecomputeModule> recompute_modules;
  // Megatron's --cpu-offloading-num-layers (NeMo's cpu_offloading_num_layers,
  // MindFormers' swap_config layer_swap): the activations the first this many
  // repeated layers of each pipeline stage keep for backward are copied to
  // host memory in the forward, beside the next layer's compute, and back in
  // the backward, beside the later layer's backward. 0: off.
  int64_t cpu_offloading_num_layers = 0;
  bool fully_use_devices = true;
  bool enable_alltoall = false;
  // The strategy search's cost model (MindSpore's set_cost_model_context):
  // "mindspore" or "time"; alpha/beta/gamma and the memory budget, 0 = the
  // defaults (beta 400 on NPUs, 50 on GPUs; the cluster's device memory).
  struct CostModel {
    std::string model = "mindspore";
    double alpha = 1.0;
    double beta = 0;
    double gamma = 0.001;
    double device_memory_capacity = 0;
    bool operator==(const CostModel&) const = default;
  } cost_model;

  int64_t devices_per_stage() const { return device_num / pipeline_stages; }
  int64_t micro_batch_size() const { return global_batch_size / micro_batch_num; }
  bool operator==(const ParallelConfig&) const = default;
};

// Reads and validates a "parallel" object. `world_size` is the device count
// used when device_num is absent (MindSpore takes it from the communication
// group; shardlab from the cluster). Relative checkpoint paths are relative
// to the file the node is in.
ParallelConfig ReadParallelConfig(const JsonNode& node, int64_t world_size);

// The settings as a JSON object with MindSpore's keys; ReadParallelConfig reads it back.
nlohmann::json ToJson(const ParallelConfig& config);

}  // namespace shardlab
