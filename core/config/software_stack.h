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
  // Tensor-parallel and sequence-parallel collectives run on the
  // communication stream beside the compute that follows them instead of
  // blocking it (Megatron's --tp-comm-overlap: Transformer Engine's
  // userbuffers split the GEMMs beside their AllGathers and ReduceScatters;
  // off in Megatron-LM by default, on in NeMo's H100 recipes).
  bool overlap_tensor_parallel = false;
  // The parallel optimizer shards one flat buffer of every parameter, each
  // 1/d of it whatever its shape and size (Megatron's distributed optimizer),
  // instead of MindSpore's rule: along the first dimension, only where the
  // shard count divides it and above parallel_optimizer_threshold.
  bool flat_optimizer_sharding = false;
  // Gradients are reduced in buckets of at least max(40M, 1M x d) elements,
  // d the data-parallel size, each as soon as its gradients exist, beside the
  // rest of the backward (Megatron's --overlap-grad-reduce and its DDP bucket
  // size), where the run configures no comm_fusion of its own.
  bool overlap_grad_reduce = false;

  bool operator==(const SoftwareStack&) const = default;
};

const char* ToString(StackPreset preset);
std::vector<std::string> StackPresetNames();
SoftwareStack PresetStack(StackPreset preset);

// "megatron", or {"preset": "megatron", "fuse_elementwise": false}.
SoftwareStack ReadSoftwareStack(const JsonNode& node);
nlohmann::json ToJson(const SoftwareStack& stack);

}  // namespace shardlab
