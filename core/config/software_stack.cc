#include "core/config/software_stack.h"

#include <nlohmann/json.hpp>

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

std::vector<std::string> StackPresetNames() { return {"mindspore", "megatron"}; }

SoftwareStack PresetStack(StackPreset preset) {
  SoftwareStack stack;
  stack.preset = preset;
  stack.fuse_elementwise = preset == StackPreset::kMegatron;
  stack.flat_optimizer_sharding = preset == StackPreset::kMegatron;
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
  stack.overlap_tensor_parallel = r.Bool("overlap_tensor_parallel", stack.overlap_tensor_parallel);
  stack.flat_optimizer_sharding = r.Bool("flat_optimizer_sharding", stack.flat_optimizer_sharding);
  stack.overlap_grad_reduce = r.Bool("overlap_grad_reduce", stack.overlap_grad_reduce);
  r.Finish();
  return stack;
}

nlohmann::json ToJson(const SoftwareStack& stack) {
  return {{"preset", ToString(stack.preset)},
          {"fuse_elementwise", stack.fuse_elementwise},
          {"overlap_tensor_parallel", stack.overlap_tensor_parallel},
          {"flat_optimizer_sharding", stack.flat_optimizer_sharding},
          {"overlap_grad_reduce", stack.overlap_grad_reduce}};
}

}  // namespace shardlab
