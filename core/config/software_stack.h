// The training software whose kernels a run models: which operators it runs
// fused into one kernel. Presets name the stacks (MindSpore/MindFormers, the
// default, and Megatron-LM/NeMo); a run's "stack" object overrides their keys.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardlab {

class JsonNode;

enum class StackPreset {
  // MindSpore 2.x graph mode on Ascend as it runs by default: every operator
  // its own kernel (graph-kernel fusion off) ("mindspore").
  kMindSpore,
  // Megatron-LM / NeMo with Transformer Engine: bias+GeLU, bias+dropout+add,
  // scale+mask+softmax and SwiGLU run as fused kernels ("megatron").
  kMegatron,
};

struct SoftwareStack {
  StackPreset preset = StackPreset::kMindSpore;
  // Chains of element-wise operators (bias, activation, dropout, residual
  // add, cast, and a softmax at a chain's end) run as one kernel: the tensors
  // between them are never written to memory and only the first launches.
  bool fuse_elementwise = false;

  bool operator==(const SoftwareStack&) const = default;
};

const char* ToString(StackPreset preset);
std::vector<std::string> StackPresetNames();
SoftwareStack PresetStack(StackPreset preset);

// "megatron", or {"preset": "megatron", "fuse_elementwise": false}.
SoftwareStack ReadSoftwareStack(const JsonNode& node);
nlohmann::json ToJson(const SoftwareStack& stack);

}  // namespace shardlab
