#include "core/config/software_stack.h"

#include <nlohmann/json.hpp>

#include "core/util/enum_names.h"
#include "core/util/json_reader.h"

namespace shardlab {

const char* ToString(StackPreset preset) {
  switch (preset) {
    case StackPreset::kMindSpore:
      return "mindspore";
    case StackPreset::kMegatron:
      return "megatron";
  }
  return "?";
}

constexpr EnumNames<GradientBuffer, 2> kGradientBuffers({"parameter", "reduce"});

const char* ToString(GradientBuffer buffer) { return kGradientBuffers[buffer]; }

constexpr EnumNames<WeightGather, 2> kWeightGathers({"operator", "layer"});

const char* ToString(WeightGather gather) { return kWeightGathers[gather]; }

constexpr EnumNames<Fp8Scaling, 3> kFp8Scalings({"delayed", "current", "block"});

const char* ToString(Fp8Scaling scaling) { return kFp8Scalings[scaling]; }

constexpr EnumNames<RankOrder, 2> kRankOrders({"tp-cp-ep-dp-pp", "tp-pp-dp"});

const char* ToString(RankOrder order) { return kRankOrders[order]; }

std::vector<std::string> StackPresetNames() { return {"mindspore", "megatron"}; }

namespace {
const std::vector<std::string> kOptimizerDTypes = {"float32", "bfloat16", "float16"};
}  // namespace

std::vector<std::string> StackKeyVocabulary(const std::string& key) {
  if (key == "preset") return StackPresetNames();
  if (key == "gradient_buffer") return kGradientBuffers.All();
  if (key == "weight_gather") return kWeightGathers.All();
  if (key == "optimizer_dtype") return kOptimizerDTypes;
  if (key == "fp8_scaling") return kFp8Scalings.All();
  if (key == "rank_order") return kRankOrders.All();
  return {};
}

SoftwareStack PresetStack(StackPreset preset) {
  SoftwareStack stack;
  stack.preset = preset;
  stack.fuse_elementwise = preset == StackPreset::kMegatron;
  stack.fuse_cross_entropy = preset != StackPreset::kMegatron;
  stack.split_views = preset == StackPreset::kMegatron;
  stack.flat_optimizer_sharding = preset == StackPreset::kMegatron;
  stack.master_weights = preset == StackPreset::kMegatron;
  stack.overlap_pipeline_sends = preset != StackPreset::kMegatron;
  stack.gradient_buffer = preset == StackPreset::kMegatron ? GradientBuffer::kReduce : GradientBuffer::kParameter;
  stack.weight_gather = preset == StackPreset::kMegatron ? WeightGather::kLayer : WeightGather::kOperator;
  return stack;
}

namespace {

StackPreset ReadPreset(const JsonNode& node) {
  return node.AsEnum(StackPresetNames()) == "megatron" ? StackPreset::kMegatron : StackPreset::kMindSpore;
}

}  // namespace

SoftwareStack ReadSoftwareStack(const JsonNode& node) {
  if (node.json().is_string()) return PresetStack(ReadPreset(node));
  ObjectReader r(node);
  SoftwareStack stack = PresetStack(ReadPreset(r.Required("preset")));
  stack.fuse_elementwise = r.Bool("fuse_elementwise", stack.fuse_elementwise);
  stack.fuse_cross_entropy = r.Bool("fuse_cross_entropy", stack.fuse_cross_entropy);
  stack.split_views = r.Bool("split_views", stack.split_views);
  stack.overlap_tensor_parallel = r.Bool("overlap_tensor_parallel", stack.overlap_tensor_parallel);
  stack.flat_optimizer_sharding = r.Bool("flat_optimizer_sharding", stack.flat_optimizer_sharding);
  stack.overlap_grad_reduce = r.Bool("overlap_grad_reduce", stack.overlap_grad_reduce);
  stack.overlap_param_gather = r.Bool("overlap_param_gather", stack.overlap_param_gather);
  stack.overlap_pipeline_sends = r.Bool("overlap_pipeline_sends", stack.overlap_pipeline_sends);
  stack.master_weights = r.Bool("master_weights", stack.master_weights);
  stack.gradient_buffer = kGradientBuffers.Parse(
      r.Enum("gradient_buffer", ToString(stack.gradient_buffer), kGradientBuffers.All()), "gradient_buffer");
  stack.weight_gather = kWeightGathers.Parse(
      r.Enum("weight_gather", ToString(stack.weight_gather), kWeightGathers.All()), "weight_gather");
  stack.fp8_param_gather = r.Bool("fp8_param_gather", stack.fp8_param_gather);
  stack.fp8_scaling =
      kFp8Scalings.Parse(r.Enum("fp8_scaling", ToString(stack.fp8_scaling), kFp8Scalings.All()), "fp8_scaling");
  stack.optimizer_dtype = *ParseDType(r.Enum("optimizer_dtype", ToString(stack.optimizer_dtype), kOptimizerDTypes));
  stack.rank_order =
      kRankOrders.Parse(r.Enum("rank_order", ToString(stack.rank_order), kRankOrders.All()), "rank_order");
  r.Finish();
  return stack;
}

nlohmann::json ToJson(const SoftwareStack& stack) {
  return {{"preset", ToString(stack.preset)},
          {"fuse_elementwise", stack.fuse_elementwise},
          {"fuse_cross_entropy", stack.fuse_cross_entropy},
          {"split_views", stack.split_views},
          {"overlap_tensor_parallel", stack.overlap_tensor_parallel},
          {"flat_optimizer_sharding", stack.flat_optimizer_sharding},
          {"overlap_grad_reduce", stack.overlap_grad_reduce},
          {"overlap_param_gather", stack.overlap_param_gather},
          {"overlap_pipeline_sends", stack.overlap_pipeline_sends},
          {"master_weights", stack.master_weights},
          {"gradient_buffer", ToString(stack.gradient_buffer)},
          {"weight_gather", ToString(stack.weight_gather)},
          {"fp8_param_gather", stack.fp8_param_gather},
          {"fp8_scaling", ToString(stack.fp8_scaling)},
          {"optimizer_dtype", ToString(stack.optimizer_dtype)},
          {"rank_order", ToString(stack.rank_order)}};
}

}  // namespace shardlab
