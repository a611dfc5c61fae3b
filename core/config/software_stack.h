// The training software whose kernels a run models: which operators it runs
// fused into one kernel. Presets name the stacks (MindSpore/MindFormers, the
// default, and Megatron-LM/NeMo); a run's "stack" object overrides their keys.
// Besides kernels: which communications overlap, how the optimizer shards and
// what mixed precision keeps (master weights, the gradient buffer's dtype).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/graph/dtype.h"

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

// Where gradients accumulate across micro-batches.
enum class GradientBuffer {
  // In the parameter's own dtype: MindSpore's accumulation buffers are clones
  // of the parameters (accu_grads) ("parameter").
  kParameter,
  // In the dtype gradients are reduced in: float32 when gradient_fp32_sync
  // (or force_fp32_communication) is on, else the parameter's dtype
  // (Megatron's DDP gradient buffer and its grad_reduce_in_fp32) ("reduce").
  kReduce,
};

// How optimizer_level "level3" gathers the sharded weights before a pass uses them.
enum class WeightGather {
  // Each operator's weights just before it, prefetched beside the operator
  // before it (MindSpore's per-parameter AllGather) ("operator").
  kOperator,
  // A layer's weights in one AllGather per group, prefetched beside the
  // layer before it (FSDP's and Megatron-FSDP's units: one transformer
  // layer) ("layer").
  kLayer,
};

// How the stack scales FP8 tensors (Transformer Engine's recipes), which
// sets what its cast kernels read per element.
enum class Fp8Scaling {
  // One scale per tensor from the amax history of earlier steps: the cast
  // reads the tensor once and records its amax as it goes (DelayedScaling;
  // Megatron's --fp8-recipe delayed, its default; NeMo 24.x) ("delayed").
  kDelayed,
  // One scale per tensor from the tensor's own amax: a pass that finds the
  // amax, then the cast (Float8CurrentScaling; --fp8-recipe tensorwise;
  // Megatron-Bridge's FP8-CS) ("current").
  kCurrent,
  // A scale per block of elements, found inside the cast's one pass (MXFP8's
  // 32-element blocks on Blackwell, DeepSeek-V3's 1x128 and 128x128 blocks;
  // --fp8-recipe mxfp8 or blockwise) ("block").
  kBlock,
};

// How the stack numbers the devices of its parallel groups: the order of
// the group dimensions from innermost (consecutive ranks) to outermost.
enum class RankOrder {
  // Tensor parallel innermost, then context, expert and data parallel, the
  // pipeline stages outermost: each stage a block of consecutive ranks
  // (Megatron-LM's default order; MindSpore numbers its stages this way too,
  // stage = rank / (device_num / pipeline_stages)) ("tp-cp-ep-dp-pp").
  kTpCpEpDpPp,
  // The pipeline stages between tensor and data parallel: the stages of one
  // data-parallel replica take consecutive tensor-parallel blocks
  // (Megatron-LM's --use-tp-pp-dp-mapping; it rules out context and expert
  // parallelism) ("tp-pp-dp").
  kTpPpDp,
};

struct SoftwareStack {
  StackPreset preset = StackPreset::kMindSpore;
  // Chains of element-wise operators (bias, activation, dropout, residual
  // add, cast, and a softmax at a chain's end) run as one kernel: the tensors
  // between them are never written to memory and only the first launches.
  bool fuse_elementwise = false;
  // The vocabulary-parallel cross entropy runs as one kernel over its
  // logits (MindSpore's CrossEntropyLoss; Megatron's
  // --cross-entropy-loss-fusion, Megatron-Bridge's default). Off, it runs as
  // Megatron-Core's unfused float32 passes: cast, max, subtract, exp, sum and
  // divide forward, multiply and cast back in the backward.
  bool fuse_cross_entropy = true;
  // A SplitV's outputs are views of its input that the consumers read in
  // place: no kernel, no traffic, and none in the backward, where the
  // consumers' gradients land in the concatenated gradient directly
  // (PyTorch's torch.split and torch.chunk, as Megatron splits its fused
  // query/key/value and gate/up products). Off, each split copies its
  // slices out (MindSpore's SplitV kernel).
  bool split_views = false;
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
  // A stage's compute goes on while its activations (or their gradients)
  // travel to the neighbouring stage (MindSpore's Send on the communication
  // stream; Megatron's --overlap-p2p-communication, interleaved schedules
  // only). Off, the stage waits for each send to end before its next pass:
  // Megatron's batched isend/irecv, waited for and followed by a device
  // synchronize (p2p_communication.py: wait_on_reqs, batch_p2p_sync), its
  // default and its only way under 1F1B; DeepSpeed's pipeline engine alike.
  bool overlap_pipeline_sends = true;
  // The parallel optimizer's weight gathers at the step's start run beside
  // the first forward, in the order it uses the weights, each waited for
  // only where its weights are first used (Megatron's
  // --overlap-param-gather, NeMo's overlap_param_sync); otherwise the first
  // forward waits for them all.
  bool overlap_param_gather = false;
  // The optimizer keeps a float32 master copy of every 16-bit parameter,
  // sharded as its moments are (Megatron's main parameters: 4 more bytes
  // per element). Off, it updates each parameter in the parameter's own
  // dtype (MindSpore: a 16-bit param_init_type has no float32 copy; a
  // float32 one is its own master).
  bool master_weights = false;
  GradientBuffer gradient_buffer = GradientBuffer::kParameter;
  WeightGather weight_gather = WeightGather::kOperator;
  // The weights of FP8 GEMMs are kept in FP8 as the model's parameters, a
  // byte per element instead of their dtype plus an FP8 copy, and the
  // parallel optimizer gathers them in FP8 (Megatron's --fp8-param-gather,
  // NeMo's fp8_params); the master copy stays with the optimizer.
  bool fp8_param_gather = false;
  Fp8Scaling fp8_scaling = Fp8Scaling::kDelayed;
  // The dtype of the optimizer's states: its moments and, with
  // master_weights, the master copy (float32; bfloat16 for NeMo's
  // distributed_fused_adam with dtype bf16, Megatron's precision-aware
  // optimizer with bf16 moments).
  DType optimizer_dtype = DType::kFloat32;
  RankOrder rank_order = RankOrder::kTpCpEpDpPp;

  bool operator==(const SoftwareStack&) const = default;
};

const char* ToString(StackPreset preset);
const char* ToString(GradientBuffer buffer);
const char* ToString(WeightGather gather);
const char* ToString(Fp8Scaling scaling);
const char* ToString(RankOrder order);
std::vector<std::string> StackPresetNames();
// The accepted values of a closed-vocabulary key of a "stack" object
// ("preset", "gradient_buffer", ...); empty for any other key.
std::vector<std::string> StackKeyVocabulary(const std::string& key);
SoftwareStack PresetStack(StackPreset preset);

// "megatron", or {"preset": "megatron", "fuse_elementwise": false}.
SoftwareStack ReadSoftwareStack(const JsonNode& node);
nlohmann::json ToJson(const SoftwareStack& stack);

}  // namespace shardlab
