// The per-device programs of one training (or inference) step, shared by
// every device of a pipeline stage: the forward and backward tasks of one
// micro-batch, the fused gradient buckets, the parallel-optimizer gathers,
// the optimizer update, the pipeline sends and the memory a device needs.
// Both engines (analytical and SimGrid) execute a Plan; a rank's program is
// its stage's, its communication groups follow from its position.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/pass_overlap.h"
#include "core/config/simulation_options.h"
#include "core/cost/collective_cost.h"
#include "core/cost/compute_cost.h"
#include "core/graph/graph.h"
#include "core/plan/pipeline_schedule.h"
#include "core/plan/rank_placement.h"

namespace shardlab {

// A partition of a stage's ranks into equal groups: the ranks that differ
// only along `dims` of `device_matrix` (laid over the stage's devices).
struct CommGroupSpec {
  Shape device_matrix;
  std::vector<int> dims;
  int64_t size = 1;
  GroupPlacement placement;  // of the group that holds the stage's first rank

  bool operator==(const CommGroupSpec& o) const { return device_matrix == o.device_matrix && dims == o.dims; }
};

struct Task {
  enum class Kind { kCompute, kCollective };
  Kind kind = Kind::kCompute;
  std::string name;
  int op = -1;  // graph operator, -1 for the optimizer
  bool recompute = false;
  // Compute.
  double flops = 0;
  double bytes = 0;
  bool on_host = false;
  bool pcie_copy = false;         // a host <-> device copy: `bytes` over PCIe, no FLOPs
  // Starts only once every host copy issued before it in the pass has ended
  // (an offloaded layer's backward, waiting for its activations).
  bool after_host_copies = false;
  KernelShape kernel;             // MatMul/BatchMatMul product or fused attention per device, and the pass
  // A product's backward whose second operand is a trained weight: the share
  // of its FLOPs and bytes that forms that operand's gradient (dB of C = A B;
  // 1 when dA is not needed), which a schedule that splits the backward runs
  // in the weight-gradient pass (SplitWeightGradients).
  double weight_gradient_fraction = 0;
  DType dtype = DType::kFloat32;  // whose peak the compute runs at (an FP8 GEMM's operand format)
  // Collective.
  Collective collective = Collective::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  int group = -1;  // index into StageProgram::groups
  double comm_bytes = 0;
  // An AlltoAll's share of the uniform exchange's server-crossing bytes that
  // cross (a flex expert dispatch, FlexCrossingShare; TimeCollective's).
  double crossing_share = 1;
  CommDimension dimension = CommDimension::kTensor;
  // Runs on the communication stream beside the compute that follows it
  // (MicroBatchInterleaved); otherwise it blocks the compute stream. A host
  // copy so marked runs on the copy engine beside everything after it
  // (activation offloading).
  bool overlapped = false;
  // A weight gather issued ahead of the compute that uses it, on a stream of
  // its own (FSDP's all-gather stream): it runs beside every step until
  // that compute, blocking collectives included, one after another with the
  // pass's other prefetches.
  bool prefetch = false;
  // Starts only once the first `prefetches_needed` prefetches of its task
  // list (the stage's forward or backward) have ended: the first compute of
  // the operator or layer they gather. The list's other tasks keep 0.
  int prefetches_needed = 0;
  // A step-start weight gather overlapped with the first forward (Megatron's
  // --overlap-param-gather): the forward time that runs before its weights
  // are first used. 0: the first forward waits for it.
  double lead_seconds = 0;
  // Closed-form duration on the cluster (compute roofline, collective alpha-beta or NCCL's model).
  double seconds = 0;
  // A collective: the share of the device's compute units its kernel holds
  // while it runs (CollectiveTiming::compute_share), which slows the compute
  // beside it (PassStep::ComputeEndSeconds).
  double compute_share = 0;
  // Under sequence pipelining, a compute task whose time depends on the
  // sequence chunk a pass runs (attention: chunk j reads j + 1 chunks of
  // keys): its duration on each chunk (`seconds` times it at the chunks'
  // mean key length). Empty: the same on every chunk.
  std::vector<double> seq_chunk_seconds;
  LibraryTiming library;  // how the SimGrid engine's flows reproduce a library-timed collective
  // dualpipe: a task of the stage's mirrored model copy (stage S - 1 - s of
  // the second direction), which its chunk 1 runs (ChunkTaskRange).
  bool mirror_copy = false;
};

struct GradientBucket {
  std::vector<int> parameters;  // graph tensor indices, in fusion order
  double bytes = 0;             // on the wire, per device
  double elements = 0;          // gradient elements per device
  int group = -1;
  Collective collective = Collective::kAllReduce;  // ReduceScatter for optimizer-sharded weights
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  int ready_after = -1;  // task of StageProgram::GradientTasks() after which its last gradient exists
  double seconds = 0;
  LibraryTiming library;
  double compute_share = 0;  // CollectiveTiming::compute_share: slows the backward beside it (BucketContentionSeconds)
  // gradient_accumulation_shard: the bucket runs after every micro-batch's
  // backward (a ReduceScatter into the sharded accumulation buffer, on the
  // communication stream beside whatever the device computes next), not only
  // after the last one.
  bool every_micro_batch = false;
  // The fusion list it was cut from (gradients of one group, collective and
  // fusion id, in MindSpore's fusion order) and its first gradient's position there.
  int list = 0;
  size_t position = 0;
};

struct MemoryBreakdown {
  double parameters = 0;
  // Of the parameters: MindSpore's gathered copies of its optimizer-sharded
  // weights, graph tensors the backward frees as it last reads them.
  double gathered_weights = 0;
  double gradients = 0;
  double optimizer_states = 0;
  double activations_per_micro_batch = 0;
  double micro_batches_in_flight = 1;  // fractional when interleaved: chunks of micro-batches
  // Of the activations, a split backward's (zero-bubble schedules): what the
  // input-gradient passes leave for their weight-gradient passes still to run.
  double held_for_weight_gradients = 0;
  double activations = 0;
  double communication_buffers = 0;
  // Host-device training: parameters used only by host operators (with their
  // gradients and optimizer states) and host operators' activations live in
  // host memory; counted here, not in the device's peak.
  double host = 0;
  double peak = 0;
  std::string dominant;  // the largest part
  double dominant_bytes = 0;
};

struct StageProgram {
  int64_t stage = 0;
  int64_t devices = 1;
  std::vector<CommGroupSpec> groups;
  std::vector<Task> forward;   // one micro-batch
  std::vector<Task> backward;  // one micro-batch; recomputed forwards come before their backward
  // Schedules that split the backward (SplitsBackward): the weight-gradient
  // products taken out of `backward`, one micro-batch's, run as a pass of
  // their own after its input-gradient pass; the gradient buckets become
  // ready in it. Empty otherwise.
  std::vector<Task> weight_gradient;
  bool splits_backward = false;
  std::vector<GradientBucket> buckets;
  std::vector<Task> step_start;  // parallel optimizer: weights gathered before the first forward
  std::vector<Task> optimizer;
  double send_forward_bytes = 0;   // activations to the next stage per micro-batch, per device
  double send_backward_bytes = 0;  // their gradients back
  double send_seconds = 0;         // one such transfer
  // The stage waits for each of its sends to end before its next pass
  // (SoftwareStack::overlap_pipeline_sends off).
  bool blocking_sends = false;
  // dualpipe: the gradients of both model copies this stage holds, as each
  // device updates them (its optimizer shard), sent to the device in the
  // same place on the mirror stage (MirrorStage) while that one's come
  // back, the two summed before the update (DeepSeek's copies see
  // different micro-batches); per device, and one such transfer's time.
  double mirror_gradient_bytes = 0;
  double mirror_gradient_seconds = 0;
  MemoryBreakdown memory;

  // When the first forward may start after the step-start gathers begin, one
  // after another on the communication stream: when they end, or, where
  // they are overlapped, once every gather ends within its lead.
  double FirstForwardStart() const;
  // Whether some step-start gather runs beside the first forward (a lead).
  bool GathersOverlapForward() const;
  // The compute the gathers that run beside the first forward hold back from
  // it (each its Task::compute_share for as long as it runs past
  // FirstForwardStart): both engines lengthen that forward by it.
  double GatherContentionSeconds() const;
  // The pass that completes the gradients, whose tasks the buckets'
  // ready_after index: the weight-gradient pass when the backward is split.
  const std::vector<Task>& GradientTasks() const { return splits_backward ? weight_gradient : backward; }
  // A schedule item's tasks: the forward, the backward (its input-gradient
  // half when split) or the weight-gradient pass.
  const std::vector<Task>& PassTasks(const ScheduleItem& item) const {
    return item.forward ? forward : item.weight_gradient ? weight_gradient : backward;
  }
  // Whether `item` runs the pass that completes its micro-batch's gradients.
  bool CompletesGradients(const ScheduleItem& item) const {
    return !item.forward && item.weight_gradient == splits_backward;
  }
};

// Moves the weight-gradient half of every product with a trained weight out
// of the stage's backward into its weight-gradient pass (same kernel shape,
// each half at its own efficiency) and re-points the buckets into that pass,
// each into the share of the `chunks` virtual pipeline chunks (ChunkTaskRange)
// whose backward completed it.
void SplitWeightGradients(StageProgram& stage, const ClusterSpec& cluster, int64_t chunks);

struct Plan {
  bool training = true;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  // Units of a forward and a backward (ScheduleItem::with_next): the
  // blocking collectives that overlap the other pass's compute. Empty: one
  // pass at a time.
  PassOverlap overlap_forward_backward;
  // The passes of each chunk a stage runs per step: micro_batch_num, times
  // seq_chunks under sequence pipelining, where each micro-batch's sequences
  // run as seq_chunks passes (the stage programs are one such pass; a
  // ScheduleItem's micro_batch is then micro-batch x seq_chunks + sequence chunk).
  int64_t micro_batches = 1;
  int64_t seq_chunks = 1;
  int64_t zbv_offset = 0;  // zero_bubble_v: SimulationOptions::zbv_offset
  int64_t micro_batch_num() const { return micro_batches / seq_chunks; }  // the run's micro-batches
  // The micro-batch and sequence chunk a pass (ScheduleItem::micro_batch) runs.
  int64_t MicroBatchOf(const ScheduleItem& item) const { return item.micro_batch / seq_chunks; }
  int64_t SeqChunkOf(const ScheduleItem& item) const { return item.micro_batch % seq_chunks; }
  int64_t chunks = 1;
  // The model copies the stage programs hold, of which each micro-batch runs
  // one: dualpipe's two (its chunks), one otherwise.
  int64_t model_copies() const { return schedule == PipelineSchedule::kDualPipe ? 2 : 1; }
  // The sharded graph's operator count. A task of dualpipe's mirrored copy
  // (Task::mirror_copy) names operator `op` - model_operators of that graph.
  int model_operators = 0;
  // The sharded graph's operator a task computes or communicates for (-1: none).
  int ModelOperator(const Task& task) const {
    return task.op >= 0 && task.mirror_copy ? task.op - model_operators : task.op;
  }
  int64_t devices = 1;
  int64_t devices_per_stage = 1;
  // Each stage's devices among the global ranks (the stack's rank_order).
  RankPlacement placement;
  double device_memory = 0;
  double peak_flops = 0;   // per device, for the model's dtype
  double model_flops = 0;  // model FLOPs of one step (ComputeModelFlops: no recompute, attention dense), for MFU
  int64_t samples_per_step = 0;
  int64_t tokens_per_step = 0;  // 0 when the model has no sequence
  // global_rank: the device whose timeline stands for its stage in the
  // step's figures (the other stages: their first rank).
  int64_t focus_rank = 0;
  std::vector<StageProgram> stages;

  // The device whose timeline stands for `stage`: focus_rank on its own
  // stage, its first device on the others.
  int64_t RepresentativeRank(int64_t stage) const;
  // The global rank of device `local` of `stage`.
  int64_t Rank(int64_t stage, int64_t local) const { return placement.Rank(stage, local); }
  // A stage's devices' global ranks, in local order.
  std::vector<int64_t> StageRanks(int64_t stage) const { return placement.StageRanks(stage); }
};

// Throws std::logic_error when the plan's placement does not describe its
// stages (a plan built by hand without one): what the engines that place
// devices (SimGrid, the executor) check first.
void CheckPlacement(const Plan& plan);

// dualpipe's stage whose model copies are `stage`'s the other way round,
// with which it sums its gradients: S - 1 - stage.
inline int64_t MirrorStage(int64_t stage, int64_t stages) { return stages - 1 - stage; }

// The order stage `stage` runs its passes in, every engine's: the plan's
// schedule, paired into units with overlap_forward_backward; an inference
// step's forwards alone.
std::vector<ScheduleItem> StageOrder(const Plan& plan, int64_t stage);

nlohmann::json ToJson(const MemoryBreakdown& m);

// The work an engine does for one step: every stage runs its forward and
// backward tasks once per micro-batch. Engines refuse a plan whose count
// passes their limit (CheckTaskRuns) before they allocate anything.
int64_t TaskRunsPerStep(const Plan& plan);

// Throws EngineLimitError saying how much work the plan asks for and how to
// lower it when TaskRunsPerStep(plan) > limit; `engine` and `cost` name the
// engine and what the limit stands for in its messages.
void CheckTaskRuns(const Plan& plan, int64_t limit, const std::string& engine, const std::string& cost);

}  // namespace shardlab
