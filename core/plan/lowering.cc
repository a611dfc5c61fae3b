#include "core/plan/lowering.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cost/compute_cost.h"
#include "core/cost/expert_dispatch.h"
#include "core/graph/fp8_format.h"
#include "core/graph/shape_inference.h"
#include "core/layout/device_matrix.h"
#include "core/layout/redistribution.h"
#include "core/ops/graph_layouts.h"
#include "core/ops/saved_for_backward.h"
#include "core/plan/dualpipe_copy.h"
#include "core/plan/kernel_fusion.h"
#include "core/plan/operator_cost.h"
#include "core/plan/overlapped_unit.h"
#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"
#include "core/util/config_error.h"

namespace shardlab {
namespace {

double SliceBytes(const TensorLayout& layout, DType dtype) {
  return static_cast<double>(ElementCount(layout.SliceShape()) * DTypeBytes(dtype));
}

// Optimizer state bytes per parameter element, with an fp32 master copy of
// low-precision weights where the stack keeps one (mixed precision).
double OptimizerBytesPerElement(Optimizer optimizer, DType param_dtype, const SoftwareStack& stack) {
  const double state = static_cast<double>(DTypeBytes(stack.optimizer_dtype));
  const double master = stack.master_weights && DTypeBytes(param_dtype) < 4 ? state : 0;
  switch (optimizer) {
    case Optimizer::kAdam:
    case Optimizer::kLamb:
    case Optimizer::kAdamOffload:
      return 2 * state + master;
    case Optimizer::kMomentum:
      return state + master;
    case Optimizer::kSgd:
      break;
  }
  return master;
}

class Lowering {
 public:
  // `mirror_from`: the first operator of dualpipe's mirrored copy (WithDualPipeCopy); the operator count without one.
  Lowering(const RunSpec& run, const Graph& graph, const std::vector<OpLayout>& layouts, bool own_batch,
           int mirror_from)
      : run_(run),
        graph_(graph),
        layouts_(layouts),
        own_batch_(own_batch),
        mirror_from_(mirror_from),
        p_(run.parallel),
        placement_(PlacementOf(run)),
        fusion_(PlanKernelFusion(graph, layouts, run.stack)),
        sequence_parallel_(
            std::any_of(graph.operators().begin(), graph.operators().end(),
                        [](const Operator& op) { return op.BoolAttr("forward_reduce_scatter", false); })),
        seq_chunks_(SequenceChunks(run.model)) {}

  // seqvpp's cycles of floor(S / n) micro-batches, two passes of warm-up
  // apart per stage, can wait on one another when n leaves a remainder of
  // the stages: such an order is refused before an engine deadlocks on it.
  void CheckSequenceSchedule(const Plan& plan) const {
    if (!RunsSequenceChunks(plan.schedule) || !plan.training) return;
    const int64_t stages = p_.pipeline_stages, chunks = Chunks();
    if (RunsThrough(plan.schedule, stages, p_.micro_batch_num, chunks, false, plan.seq_chunks)) return;
    throw ConfigError(run_.file,
                      run_.parallel.pipeline_config ? "/parallel/pipeline_config" : "/simulation/pipeline_schedule",
                      fmt::format("pipeline_schedule \"{}\" deadlocks with {} stages, {} micro-batches, {} chunks and "
                                  "seq_split_num {}: its stages wait on one another (use seqsmartvpp, or a "
                                  "seq_split_num that divides pipeline_stages)",
                                  ToString(plan.schedule), stages, p_.micro_batch_num, chunks, plan.seq_chunks));
  }

  Plan Run() {
    Plan plan;
    plan.training = run_.simulation.training();
    plan.schedule = run_.simulation.pipeline_schedule;
    plan.zbv_offset = run_.simulation.zbv_offset;
    if (plan.training) plan.overlap_forward_backward = ForwardBackwardOverlap(run_);
    plan.seq_chunks = seq_chunks_;
    plan.micro_batches = p_.micro_batch_num * plan.seq_chunks;
    CheckSequenceSchedule(plan);
    if (plan.schedule == PipelineSchedule::kDualPipe && p_.micro_batch_interleaved > 1)
      throw ConfigError(run_.file, "/parallel/micro_batch_interleaved",
                        "the dualpipe schedule is not built with micro_batch_interleaved: its slices would interleave "
                        "the two model copies' tasks, which run in passes of their own");
    if (plan.schedule == PipelineSchedule::kDualPipe && plan.training && AccumulatesShardedGradients(p_))
      throw ConfigError(run_.file, "/parallel/parallel_optimizer_config",
                        "the dualpipe schedule is not built with gradients reduce-scattered after every micro-batch "
                        "(gradient_accumulation_shard, optimizer_level level2 or level3): each micro-batch runs one "
                        "of its two model copies, whose sharded gradients would both be reduced");
    plan.chunks = Chunks();
    plan.model_operators = mirror_from_;
    plan.devices = p_.device_num;
    plan.devices_per_stage = p_.devices_per_stage();
    plan.placement = placement_;
    plan.focus_rank = p_.global_rank;
    plan.device_memory = run_.cluster.device.memory_bytes;
    plan.samples_per_step = p_.global_batch_size;
    const auto& values = run_.model.params.values();
    if (values.count("seq_length")) plan.tokens_per_step = p_.global_batch_size * run_.model.params.Int("seq_length");
    plan.peak_flops = PeakFlops(run_.cluster.device, ComputeDType(run_.model));
    // The model's FLOPs: a micro-batch runs one of dualpipe's two copies.
    for (int i = 0; i < mirror_from_; ++i) {
      const ModelFlops f = ComputeModelFlops(graph_, graph_.op(i));
      const double backward = BackwardShare(i) * f.backward;  // none for frozen weights
      plan.model_flops += (plan.training ? f.forward + backward : f.forward);
    }
    plan.model_flops *= static_cast<double>(plan.micro_batches);

    for (int64_t s = 0; s < p_.pipeline_stages; ++s) {
      StageProgram stage;
      stage.stage = s;
      stage.devices = p_.devices_per_stage();
      plan.stages.push_back(std::move(stage));
    }
    shares_ = ParamShares();
    share_of_tensor_.assign(graph_.tensors().size(), -1);
    for (size_t i = 0; i < shares_.size(); ++i) share_of_tensor_[shares_[i].tensor] = static_cast<int>(i);
    host_only_ = HostOnlyParameters();
    if (plan.training) FindOffloadGroups();
    for (size_t i = 0; i < graph_.operators().size(); ++i) Forward(plan, static_cast<int>(i));
    if (plan.training)
      for (size_t i = graph_.operators().size(); i-- > 0;) Backward(plan, static_cast<int>(i));
    if (GathersWeightsJustInTime())
      for (auto& stage : plan.stages) GatherWeightsJustInTime(stage);
    if (run_.stack.overlap_tensor_parallel)
      for (auto& stage : plan.stages) OverlapTensorParallel(stage);
    if (p_.micro_batch_interleaved > 1) {
      CheckInterleavedBatch();
      for (auto& stage : plan.stages) Interleave(stage);
    }
    if (plan.training) {
      for (auto& stage : plan.stages) GradientsAndOptimizer(stage);
      if (SplitsBackward(plan.schedule))
        for (auto& stage : plan.stages) SplitWeightGradients(stage, run_.cluster, Chunks());
    }
    Sends(plan);
    if (!plan.overlap_forward_backward.empty())
      for (const auto& stage : plan.stages) CheckOverlappable(stage);
    for (auto& stage : plan.stages) Memory(plan, stage);
    return plan;
  }

 private:
  StageProgram& StageOf(Plan& plan, int op) { return plan.stages[graph_.op(op).pipeline_stage]; }

  // The chunks each stage's passes run as: zero_bubble_v's V has two arms,
  // dualpipe two directions, whatever the options say; the interleaved
  // schedule the options' count.
  int64_t Chunks() const {
    if (RunsTwoChunks(run_.simulation.pipeline_schedule)) return 2;
    return RunsChunks(run_.simulation.pipeline_schedule) ? run_.simulation.virtual_pipeline_chunks : 1;
  }

  // The layout of an operator output as its producer lays it out.
  const TensorLayout& ProducerLayout(int tensor) const {
    const int producer = graph_.tensor(tensor).producer;
    const std::vector<int>& outputs = graph_.op(producer).outputs;
    return layouts_[producer].outputs[std::find(outputs.begin(), outputs.end(), tensor) - outputs.begin()];
  }

  // The stack's TP overlap: operator-level collectives run beside the
  // compute after them, on Transformer Engine's userbuffers rather than
  // NCCL's kernels where NCCL would run them (a compute share): its
  // AllGathers as ring exchanges on the copy engines, one SM signalling,
  // and its ReduceScatters pipelined or in bulk on 16 SMs (TE's default
  // num_sm, transformer_engine/pytorch/module/base.py, get_default_config),
  // which the GEMMs beside them leave free.
  static constexpr int kUserbufferGatherSms = 1;
  static constexpr int kUserbufferScatterSms = 16;
  void OverlapTensorParallel(StageProgram& stage) const {
    for (std::vector<Task>* pass : {&stage.forward, &stage.backward})
      for (Task& t : *pass) {
        if (t.kind != Task::Kind::kCollective ||
            (t.dimension != CommDimension::kTensor && t.dimension != CommDimension::kSequence))
          continue;
        t.overlapped = true;
        if (t.compute_share <= 0) continue;
        if (t.collective == shardlab::Collective::kAllGather)
          t.compute_share = ComputeShare(kUserbufferGatherSms, run_.cluster);
        if (t.collective == shardlab::Collective::kReduceScatter)
          t.compute_share = ComputeShare(kUserbufferScatterSms, run_.cluster);
      }
  }

  // MicroBatchInterleaved: each pass runs as interleaved slices of the
  // micro-batch, one slice's collectives beside the next slice's compute.
  // A slice's work and bytes are the task's divided by the slice count (the
  // weight reads of memory-bound kernels are divided too); kernel overheads
  // are paid once per slice.
  // Each slice takes 1/k of every device's share of the batch.
  void CheckInterleavedBatch() const {
    const int64_t k = p_.micro_batch_interleaved;
    for (size_t t = 0; t < graph_.tensors().size(); ++t) {
      if (graph_.tensor(static_cast<int>(t)).kind != TensorKind::kInput) continue;
      const Shape slice = DatasetLayout(static_cast<int>(t)).SliceShape();
      if (!slice.empty() && slice[0] % k != 0)
        throw LayoutError(
            fmt::format("micro_batch_interleaved {} cannot split the {} samples of dataset input "
                        "\"{}\" on each device",
                        k, slice[0], graph_.tensor(static_cast<int>(t)).name));
    }
  }

  void Interleave(StageProgram& stage) {
    const int k = static_cast<int>(p_.micro_batch_interleaved);
    const double kk = static_cast<double>(k);
    auto scale = [&](const Task& t) {
      if (t.pcie_copy) {
        Task c = HostTransfer(t.name, t.op, t.bytes / kk);
        c.overlapped = t.overlapped;
        c.after_host_copies = t.after_host_copies;
        return c;
      }
      if (t.kind == Task::Kind::kCompute) {
        // A slice holds 1/k of the samples: of a mixture of experts' token
        // groups (in m), else of a batched product's batch, else of m.
        KernelShape kernel = t.kernel;
        if (kernel.gemm.groups % k == 0) {
          kernel.gemm.groups /= k;
          kernel.gemm.m /= k;
        } else if (kernel.gemm.batch % k == 0) {
          kernel.gemm.batch /= k;
        } else if (!kernel.gemm.empty()) {
          kernel.gemm.m = std::max<int64_t>(1, kernel.gemm.m / k);
        }
        Task c = Compute(t.name, t.op, t.flops / kk, t.bytes / kk, t.dtype, t.on_host, kernel);
        c.recompute = t.recompute;
        c.weight_gradient_fraction = t.weight_gradient_fraction;
        return c;
      }
      // Prefetched weight gathers become overlapped collectives of the
      // slices (InterleavePass overlaps every copied collective): their
      // waits counted prefetches of the unsliced pass.
      Task c = Collective(stage, t.name, t.op, t.collective, t.group, t.comm_bytes / kk);
      c.recompute = t.recompute;
      c.dimension = t.dimension;
      SetCrossingShare(stage, t.crossing_share, c);
      c.compute_share = t.compute_share;  // the kernels that ran it (a flex dispatch's, the stack's TP overlap)
      return c;
    };
    std::vector<int> index_map;
    stage.forward = InterleavePass(stage.forward, k, scale, &index_map);
    stage.backward = InterleavePass(stage.backward, k, scale, &index_map);
    for (auto& [op, task] : backward_task_of_op_)
      if (graph_.op(op).pipeline_stage == stage.stage) task = index_map[task];
  }

  // Groups are kept in a canonical form (size-1 dimensions dropped, runs of
  // grouped or ungrouped dimensions merged) so that operators whose device
  // matrices differ but whose groups are the same ranks share one group.
  static CommGroupSpec Canonical(const Shape& matrix, const std::vector<int>& dims) {
    CommGroupSpec spec;
    bool last_grouped = false;
    for (size_t d = 0; d < matrix.size(); ++d) {
      if (matrix[d] == 1) continue;
      const bool grouped = std::find(dims.begin(), dims.end(), static_cast<int>(d)) != dims.end();
      if (!spec.device_matrix.empty() && grouped == last_grouped) {
        spec.device_matrix.back() *= matrix[d];
      } else {
        spec.device_matrix.push_back(matrix[d]);
        if (grouped) spec.dims.push_back(static_cast<int>(spec.device_matrix.size()) - 1);
      }
      last_grouped = grouped;
    }
    return spec;
  }

  int Group(StageProgram& stage, const Shape& matrix, const std::vector<int>& dims) {
    CommGroupSpec spec = Canonical(matrix, dims);
    for (auto it = stage.groups.begin(); it != stage.groups.end(); ++it)
      if (*it == spec) return static_cast<int>(it - stage.groups.begin());
    const std::vector<int64_t> ranks = placement_.StageRanks(stage.stage);
    const auto members = DeviceMatrix(spec.device_matrix, ranks).GroupAlongDims(ranks.front(), spec.dims);
    spec.size = static_cast<int64_t>(members.size());
    spec.placement = PlaceGroup(members, run_.cluster);
    stage.groups.push_back(spec);
    return static_cast<int>(stage.groups.size() - 1);
  }

  Task Collective(StageProgram& stage, const std::string& name, int op, shardlab::Collective type, int group,
                  double bytes) {
    Task t;
    t.kind = Task::Kind::kCollective;
    t.name = name;
    t.op = op;
    t.mirror_copy = op >= mirror_from_;
    t.collective = type;
    t.group = group;
    t.comm_bytes = bytes;
    const GroupPlacement& placement = stage.groups[group].placement;
    t.algorithm = ChooseAlgorithm(type, bytes, placement, run_.cluster, run_.simulation.collective_algorithms);
    const CollectiveTiming timing = TimeCollective(type, t.algorithm, bytes, placement, run_.cluster);
    t.seconds = timing.seconds;
    t.library = timing.library;
    t.compute_share = timing.compute_share;
    return t;
  }

  Task Compute(const std::string& name, int op, double flops, double bytes, DType dtype, bool on_host,
               const KernelShape& kernel = {}) {
    Task t;
    t.name = name;
    t.op = op;
    t.mirror_copy = op >= mirror_from_;
    t.flops = flops;
    t.bytes = bytes;
    t.on_host = on_host;
    t.kernel = kernel;
    t.dtype = dtype;
    t.seconds = ComputeSeconds(flops, bytes, dtype, run_.cluster, on_host, kernel).seconds;
    if (seq_chunks_ > 1 && !kernel.attention.empty()) {
      const int64_t n = seq_chunks_;
      // The graph's attention reads the whole sequence's keys at the chunks'
      // mean (half of them, causal); chunk j reads j + 1/2 chunks' worth.
      for (int64_t j = 0; j < n; ++j) {
        const double share = static_cast<double>(2 * j + 1) / static_cast<double>(n);
        KernelShape chunk = kernel;
        chunk.attention.kv_length = std::max<int64_t>(1, kernel.attention.kv_length * (2 * j + 1) / n);
        t.seq_chunk_seconds.push_back(
            ComputeSeconds(flops * share, bytes, dtype, run_.cluster, on_host, chunk).seconds);
      }
    }
    return t;
  }

  double Fp8Cast(int index, bool backward) const {
    const Operator& op = graph_.op(index);
    return Fp8CastBytes(graph_, layouts_, index, run_.stack, backward, op.inputs.size() > 1 && !Frozen(op.inputs[1]));
  }

  KernelShape KernelOf(int index, bool backward) const {
    return OperatorKernel(graph_.op(index), layouts_[index], backward,
                          fusion_[static_cast<size_t>(index)].follows_producer);
  }

  // The communication that turns each input's producer layout into the layout this operator wants.
  // How a dataset input arrives on a stage's devices: split on the batch
  // over every device (dataset_strategy "data_parallel", MindSpore's
  // default), whole on every device (full_batch), or by its own tuple.
  TensorLayout DatasetLayout(int tensor) const {
    const Tensor& t = graph_.tensor(tensor);
    const int64_t devices = p_.devices_per_stage();
    TensorMap map(t.shape.size(), kNotSplit);
    switch (p_.dataset_strategy.kind) {
      case DatasetStrategy::Kind::kFullBatch:
        return TensorLayout({devices}, map, t.shape);
      case DatasetStrategy::Kind::kDataParallel:
        if (t.shape.empty() || t.shape[0] % devices != 0)
          throw LayoutError(
              fmt::format("dataset input \"{}\" {}: a batch of {} cannot be split over the {} devices of a "
                          "stage; set full_batch or a dataset_strategy",
                          t.name, fmt::join(t.shape, "x"), t.shape.empty() ? 0 : t.shape[0], devices));
        map[0] = 0;
        return TensorLayout({devices}, map, t.shape);
      case DatasetStrategy::Kind::kShard:
        break;
    }
    int position = 0;
    for (int i = 0; i < tensor; ++i) position += graph_.tensor(i).kind == TensorKind::kInput;
    const auto& tuples = p_.dataset_strategy.shard;
    if (position >= static_cast<int>(tuples.size()))
      throw LayoutError(fmt::format("dataset_strategy has {} tuples but dataset input \"{}\" is number {}",
                                    tuples.size(), t.name, position + 1));
    const auto& tuple = tuples[position];
    if (tuple.size() != t.shape.size())
      throw LayoutError(fmt::format("dataset_strategy tuple {} has {} entries but input \"{}\" has {} dimensions",
                                    position, tuple.size(), t.name, t.shape.size()));
    int64_t used = 1;
    for (int64_t v : tuple) used *= v;
    if (devices % used != 0)
      throw LayoutError(fmt::format("dataset_strategy tuple {} uses {} devices, which does not divide the stage's {}",
                                    position, used, devices));
    Shape dev(tuple.begin(), tuple.end());
    dev.push_back(devices / used);  // repetition on the right, as for operators
    for (size_t d = 0; d < tuple.size(); ++d) map[d] = static_cast<int64_t>(tuple.size() - d);
    return TensorLayout(dev, map, t.shape);
  }

  // The redistribution input `i` of operator `op_index` needs from its
  // producer's layout; none for weights and for inputs already in place.
  std::optional<Redistribution> InputRedistribution(int op_index, size_t i) const {
    const Operator& op = graph_.op(op_index);
    const Tensor& t = graph_.tensor(op.inputs[i]);
    if (t.kind == TensorKind::kParameter) return std::nullopt;
    TensorLayout from;
    if (t.kind == TensorKind::kInput) {
      from = DatasetLayout(op.inputs[i]);
    } else {
      from = ProducerLayout(op.inputs[i]);
    }
    const TensorLayout& to = layouts_[op_index].inputs[i];
    if (from.Normalized() == to.Normalized()) return std::nullopt;
    return PlanRedistribution(from, to, p_.enable_alltoall, DTypeBytes(t.dtype));
  }

  // True when input `c.input` is AllGathered on its way in over the very
  // devices `c` spans: the gradient's ReduceScatter then sums the partials
  // `c` would AllReduce (Megatron's sequence-parallel column layer).
  bool GatheredOnTheWayIn(int op_index, const OpComm& c) const {
    if (own_batch_) return false;
    const auto r = InputRedistribution(op_index, static_cast<size_t>(c.input));
    if (!r) return false;
    const CommGroupSpec partials = Canonical(layouts_[op_index].device_matrix, c.device_dims);
    return std::any_of(r->ops.begin(), r->ops.end(), [&](const RedistOp& rop) {
      return rop.is_communication() && rop.collective() == shardlab::Collective::kAllGather &&
             Canonical(rop.arrangement, {rop.device_dim}) == partials;
    });
  }

  // None when every device runs on its own batch (data_parallel).
  std::vector<Task> Redistributions(StageProgram& stage, int op_index, bool backward) {
    std::vector<Task> tasks;
    if (own_batch_) return tasks;
    const Operator& op = graph_.op(op_index);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Tensor& t = graph_.tensor(op.inputs[i]);
      if (t.kind == TensorKind::kInput && backward) continue;  // dataset inputs have no gradient
      // A LoRA adapter beside an expert GEMM reads the GEMM's own input,
      // which came to its experts with the GEMM's redistribution (and its
      // gradient goes back with it).
      if (i == 0 && op.BoolAttr("shares_expert_input", false)) continue;
      const auto r = InputRedistribution(op_index, i);
      if (!r) continue;
      // Tokens on their way to their experts or back.
      const bool routes_tokens =
          (op.type == "MoeCombine" && i == 0) || (t.producer >= 0 && graph_.op(t.producer).type == "MoeDispatch");
      const std::optional<CommGroupSpec> context_group = ContextGroup(op_index, i);
      // DeepSeek-V3's FP8 dispatch: a byte per element and a float32 scale per 128 on the way out.
      const bool fp8_tokens =
          routes_tokens && !backward && t.producer >= 0 && graph_.op(t.producer).BoolAttr("fp8_dispatch", false);
      // A norm's FP8 output gathered for a sequence-parallel FP8 GEMM: a byte per element.
      const bool fp8_gather = !backward && i == 0 && Fp8FromNorm(graph_, op);
      // Sequence parallelism gathers the token rows split over the
      // tensor-parallel group before each tensor-parallel block: the
      // destination holds more of the first axis and as much of every other.
      const Shape from = r->from.SliceShape(), to = r->to.SliceShape();
      const bool gathers_rows = sequence_parallel_ && !from.empty() && from.size() == to.size() && from[0] < to[0] &&
                                std::equal(from.begin() + 1, from.end(), to.begin() + 1);
      for (const RedistOp& rop : r->ops) {
        if (!rop.is_communication()) continue;
        const double bytes = static_cast<double>(ElementCount(rop.input_shape)) *
                             (fp8_tokens ? 1 + 4.0 / 128 : static_cast<double>(DTypeBytes(t.dtype)));
        shardlab::Collective type = rop.collective();
        // AllGather's gradient is a ReduceScatter of the gathered size; AlltoAll's is an AlltoAll.
        double task_bytes = bytes;
        if (fp8_gather && type == shardlab::Collective::kAllGather)
          task_bytes = bytes / static_cast<double>(DTypeBytes(t.dtype));
        if (backward && type == shardlab::Collective::kAllGather) {
          type = shardlab::Collective::kReduceScatter;
          task_bytes = bytes * static_cast<double>(rop.count);
        }
        tasks.push_back(Collective(stage, fmt::format("{}/redistribute.{}", op.name, ToString(rop.kind)), op_index,
                                   type, Group(stage, rop.arrangement, {rop.device_dim}),
                                   WireBytes(type, task_bytes, t.dtype)));
        if (gathers_rows && rop.kind == RedistOp::Kind::kAllGather) tasks.back().dimension = CommDimension::kSequence;
        if (routes_tokens) {
          tasks.back().dimension = CommDimension::kExpert;
          if (type == shardlab::Collective::kAllToAll)
            FlexDispatch(stage, op.type == "MoeCombine" ? op : graph_.op(t.producer), tasks.back());
        }
        if (context_group && rop.collective() == shardlab::Collective::kAllGather &&
            Canonical(rop.arrangement, {rop.device_dim}) == *context_group) {
          tasks.back().dimension = CommDimension::kContext;
          tasks.back().overlapped = op.BoolAttr("enable_ring_attention", false);
        }
        // Ulysses: sequence exchanged for heads around attention.
        if (op.BoolAttr("context_exchange", false) && rop.collective() == shardlab::Collective::kAllToAll)
          tasks.back().dimension = CommDimension::kContext;
      }
      if (routes_tokens) {
        // Tokens that came in FP8 are sorted in FP8.
        const double scale = fp8_tokens ? (1 + 4.0 / 128) / static_cast<double>(DTypeBytes(t.dtype)) : 1.0;
        if (const double bytes = ExpertSortBytes(op_index, i); bytes > 0)
          tasks.push_back(
              Compute(fmt::format("{}/sort_by_expert", op.name), op_index, 0, scale * bytes, t.dtype, false));
      }
    }
    return tasks;
  }

  // A flex dispatch's (or its combine's) AlltoAll: only the share of its
  // server-crossing bytes that a token's servers take crosses (FlexCrossingShare).
  void FlexDispatch(const StageProgram& stage, const Operator& routing, Task& task) const {
    if (!routing.BoolAttr("flex_dispatch", false)) return;
    ExpertRouting r;
    r.experts = routing.IntAttr("experts", 1);
    r.experts_per_token = routing.IntAttr("experts_per_token", 1);
    r.groups = routing.IntAttr("router_groups", 1);
    r.group_topk = routing.IntAttr("router_group_topk", 1);
    r.capacity_factor = routing.NumberAttr("capacity_factor", 1);
    SetCrossingShare(stage, FlexCrossingShare(r, stage.groups[task.group].placement.servers), task);
    // DeepEP's kernels, where NCCL's would hold SMs.
    if (task.compute_share > 0) task.compute_share = ComputeShare(kFlexDispatchSms, run_.cluster);
  }

  // Times an AlltoAll whose server-crossing bytes are `share` of the uniform exchange's.
  void SetCrossingShare(const StageProgram& stage, double share, Task& task) const {
    if (share >= 1) return;
    task.crossing_share = share;
    const CollectiveTiming timing = TimeCollective(task.collective, task.algorithm, task.comm_bytes,
                                                   stage.groups[task.group].placement, run_.cluster, share);
    task.seconds = timing.seconds;
    task.library = timing.library;
    task.compute_share = timing.compute_share;
  }

  // The tokens an expert-parallel exchange delivers arrive ordered by the
  // device they came from; a device holding several experts sorts them by
  // expert before its experts' products, and back before the exchange home
  // (priced after that exchange here: the same time on one stream)
  // (Megatron-Core's MoEAlltoAllTokenDispatcher: sort_chunks_by_idxs when
  // num_local_experts > 1; MindSpore's transpose of the received slots):
  // a read and a write of the expert side's slice [groups, experts,
  // capacity, hidden], in each pass. 0 without an AlltoAll or with one
  // expert per device.
  double ExpertSortBytes(int op_index, size_t i) const {
    const auto r = InputRedistribution(op_index, i);
    if (!r || std::none_of(r->ops.begin(), r->ops.end(), [](const RedistOp& rop) {
          return rop.is_communication() && rop.collective() == shardlab::Collective::kAllToAll;
        }))
      return 0;
    const Operator& op = graph_.op(op_index);
    const int t = op.inputs[i];
    // The expert side: what the experts read (dispatch), or what they wrote (combine).
    const TensorLayout expert_side = op.type == "MoeCombine" ? ProducerLayout(t) : layouts_[op_index].inputs[i];
    const Shape slice = expert_side.SliceShape();
    if (slice.size() != 4 || slice[1] <= 1) return 0;
    return 2 * SliceBytes(expert_side, graph_.tensor(t).dtype);
  }

  // When input `i` of operator `op_index` is the keys or values of an
  // attention whose queries are split by sequence: the context-parallel
  // group, the devices that share a query's batch and heads but hold other
  // chunks of its sequence. Gathers of the keys and values over it are the
  // context-parallel exchange (dimension "context").
  std::optional<CommGroupSpec> ContextGroup(int op_index, size_t i) const {
    const Operator& op = graph_.op(op_index);
    if (op.type != "FlashAttentionScore" || (i != 1 && i != 2)) return std::nullopt;
    const OpLayout& layout = layouts_[op_index];
    const int64_t seq = layout.inputs[0].tensor_map()[FlashAttentionDims(op).seq];
    if (seq == kNotSplit) return std::nullopt;
    return Canonical(layout.device_matrix, {DimFromMapValue(seq, layout.device_matrix.size())});
  }

  // The keys and values a context-parallel attention gathers (its forward
  // redistributions along the context-parallel group), named with `suffix`:
  // it keeps only its own sequence chunk (SaveForBackward), so a recomputed
  // forward and the backward gather them again, as Megatron's all_gather and
  // p2p exchanges do.
  std::vector<Task> ContextGathers(StageProgram& stage, int op_index, const std::string& suffix) {
    std::vector<Task> tasks;
    if (graph_.op(op_index).type != "FlashAttentionScore") return tasks;
    for (Task& t : Redistributions(stage, op_index, false)) {
      if (t.dimension != CommDimension::kContext) continue;
      t.name += suffix;
      tasks.push_back(std::move(t));
    }
    return tasks;
  }

  // Recompute segments are the runs of recompute-marked operators of one
  // layer (name scope before the first '/') on one stage, as MindSpore
  // recomputes per cell.
  bool SameSegment(int a, int b) const {
    const Operator &x = graph_.op(a), &y = graph_.op(b);
    if (!x.recompute || !y.recompute || x.pipeline_stage != y.pipeline_stage) return false;
    return ScopeOf(x.name) == ScopeOf(y.name);
  }

  DType OutputDType(const Operator& op) const { return graph_.tensor(op.outputs.front()).dtype; }

  // force_fp32_communication: reductions (AllReduce, ReduceScatter) of
  // 16-bit tensors carry fp32 on the wire.
  double WireBytes(shardlab::Collective type, double bytes, DType dtype) const {
    const bool reduction = type == shardlab::Collective::kAllReduce || type == shardlab::Collective::kReduceScatter;
    const bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
    if (!p_.force_fp32_communication || !reduction || !half) return bytes;
    return 2 * bytes;
  }

  // A copy over PCIe between host and device memory.
  Task HostTransfer(const std::string& name, int op, double bytes) const {
    Task t;
    t.name = name;
    t.op = op;
    t.mirror_copy = op >= mirror_from_;
    t.bytes = bytes;
    t.pcie_copy = true;
    t.seconds = bytes / run_.cluster.host.pcie_bandwidth + run_.cluster.host.pcie_latency;
    return t;
  }

  // Activation offloading: a copy on the device's copy engine, beside the
  // compute and communication after it (PassStep::copy_seconds).
  Task HostCopy(const std::string& name, int op, double bytes) const {
    Task t = HostTransfer(name, op, bytes);
    t.overlapped = true;
    return t;
  }

  // Activation offloading: runs of consecutive offload-marked operators of
  // one name scope (a layer) on one stage, in forward order.
  struct OffloadGroup {
    int first_op = 0, last_op = 0;
    std::string scope;
    double bytes = 0;     // what its operators keep for backward, copied out and back
    int prefetch_op = 0;  // its copy back starts with this operator's backward (the next layer's first)
  };

  // A layer's name scope: the text before the first '/' (the whole name when there is none).
  static std::string ScopeOf(const std::string& name) { return name.substr(0, name.find('/')); }

  void FindOffloadGroups() {
    const int n = static_cast<int>(graph_.operators().size());
    offload_group_of_op_.assign(static_cast<size_t>(n), -1);
    for (int i = 0; i < n; ++i) {
      const Operator& op = graph_.op(i);
      if (!op.offload_activations) continue;
      if (op.recompute)
        throw LayoutError(fmt::format("operator \"{}\" is marked both recompute and offload_activations: a "
                                      "recomputed operator keeps nothing to offload",
                                      op.name));
      const bool joins = !offload_groups_.empty() && offload_groups_.back().last_op == i - 1 &&
                         offload_groups_.back().scope == ScopeOf(op.name) &&
                         graph_.op(i - 1).pipeline_stage == op.pipeline_stage;
      if (joins) {
        offload_groups_.back().last_op = i;
      } else {
        offload_groups_.push_back({i, i, ScopeOf(op.name)});
      }
      offload_group_of_op_[static_cast<size_t>(i)] = static_cast<int>(offload_groups_.size()) - 1;
    }
    for (OffloadGroup& g : offload_groups_) {
      SavedActivations kept;
      for (int i = g.first_op; i <= g.last_op; ++i) SaveForBackward(i, kept);
      g.bytes = kept.Bytes();
      // The next layer on the stage: its backward, which runs first, hides
      // the copy back (none: the group's own backward waits for it whole).
      g.prefetch_op = g.last_op;
      const int next = g.last_op + 1;
      if (next < n && graph_.op(next).pipeline_stage == graph_.op(g.last_op).pipeline_stage) {
        g.prefetch_op = next;
        while (g.prefetch_op + 1 < n && ScopeOf(graph_.op(g.prefetch_op + 1).name) == ScopeOf(graph_.op(next).name) &&
               graph_.op(g.prefetch_op + 1).pipeline_stage == graph_.op(next).pipeline_stage)
          ++g.prefetch_op;
      }
    }
  }

  // Host-device training: a tensor crossing between an operator on the host
  // and one on the device moves over PCIe (its gradient crosses back in backward).
  std::vector<Task> HostTransfers(int index, bool backward) {
    std::vector<Task> tasks;
    const Operator& op = graph_.op(index);
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const Tensor& t = graph_.tensor(op.inputs[i]);
      if (t.producer < 0 || graph_.op(t.producer).OnHost() == op.OnHost()) continue;
      tasks.push_back(
          HostTransfer(fmt::format("{}/{}", op.name, op.OnHost() != backward ? "device_to_host" : "host_to_device"),
                       index, SliceBytes(layouts_[index].inputs[i], t.dtype)));
    }
    return tasks;
  }

  std::vector<Task> ForwardTasks(StageProgram& stage, int index, bool recompute) {
    const Operator& op = graph_.op(index);
    const OpLayout& layout = layouts_[index];
    // A recomputed operator reads the tensors its segment kept; only a
    // context-parallel attention gathers its keys and values again.
    std::vector<Task> tasks =
        recompute ? ContextGathers(stage, index, ".recompute") : Redistributions(stage, index, false);
    for (Task& t : tasks) t.recompute = recompute;
    for (Task& t : HostTransfers(index, false)) tasks.push_back(std::move(t));
    if (const double cast = Fp8Cast(index, false); cast > 0) {
      Task t = Compute(op.name + (recompute ? "/recompute.fp8_cast" : "/fp8_cast"), index, 0, cast,
                       graph_.tensor(op.inputs[0]).dtype, false);
      t.recompute = recompute;
      tasks.push_back(t);
    }
    Task compute =
        Compute(op.name + (recompute ? "/recompute" : "/forward"), index, layout.work.forward_flops,
                std::max(0.0, layout.work.forward_bytes - fusion_[static_cast<size_t>(index)].saved_forward_bytes) +
                    fusion_[static_cast<size_t>(index)].extra_forward_bytes,
                PassDType(graph_, op, false), op.OnHost(), KernelOf(index, false));
    compute.recompute = recompute;
    tasks.push_back(compute);
    for (const OpComm& c : layout.forward_comm) {
      Task t =
          Collective(stage, fmt::format("{}/{}", op.name, OperatorName(c.type)), index, c.type,
                     Group(stage, layout.device_matrix, c.device_dims), WireBytes(c.type, c.bytes, OutputDType(op)));
      t.recompute = recompute;
      // A product's ReduceScatter of its output rows: sequence parallelism's.
      if (c.type == shardlab::Collective::kReduceScatter) t.dimension = CommDimension::kSequence;
      tasks.push_back(t);
    }
    return tasks;
  }

  void Forward(Plan& plan, int index) {
    StageProgram& stage = StageOf(plan, index);
    for (Task& t : ForwardTasks(stage, index, false)) stage.forward.push_back(std::move(t));
    const int g = OffloadGroupOf(index);
    if (g >= 0 && offload_groups_[g].last_op == index)
      stage.forward.push_back(HostCopy(offload_groups_[g].scope + "/offload.device_to_host", index,
                                        offload_groups_[g].bytes));
  }

  int OffloadGroupOf(int op) const {
    return offload_group_of_op_.empty() ? -1 : offload_group_of_op_[static_cast<size_t>(op)];
  }

  // Recompute: before the backward of the last operator of a run of
  // recompute-marked operators, their forward runs again.
  void Backward(Plan& plan, int index) {
    const Operator& op = graph_.op(index);
    StageProgram& stage = StageOf(plan, index);
    const OpLayout& layout = layouts_[index];
    // Activation offloading: a layer's activations come back beside the
    // backward of the layer after it; its own backward waits for them
    // (before it sends for the layer before it).
    const size_t first_task = stage.backward.size();
    for (const OffloadGroup& g : offload_groups_)
      if (g.prefetch_op == index)
        stage.backward.push_back(HostCopy(g.scope + "/offload.host_to_device", g.last_op, g.bytes));
    const int group = OffloadGroupOf(index);
    const bool segment_continues =
        index + 1 < static_cast<int>(graph_.operators().size()) && SameSegment(index, index + 1);
    if (op.recompute && !segment_continues) {
      int first = index;
      while (first > 0 && SameSegment(first - 1, index)) --first;
      for (int i = first; i <= index; ++i)
        for (Task& t : ForwardTasks(stage, i, true)) stage.backward.push_back(std::move(t));
    }
    // Forward collectives whose gradient needs communication.
    for (const OpComm& c : layout.forward_comm) {
      if (c.type == shardlab::Collective::kReduceScatter) {
        stage.backward.push_back(Collective(stage, op.name + "/grad.AllGather", index, shardlab::Collective::kAllGather,
                                            Group(stage, layout.device_matrix, c.device_dims),
                                            c.bytes / static_cast<double>(c.group_size)));
        stage.backward.back().dimension = CommDimension::kSequence;
      }
      if (c.type == shardlab::Collective::kAllGather)
        stage.backward.push_back(Collective(stage, op.name + "/grad.ReduceScatter", index,
                                            shardlab::Collective::kReduceScatter,
                                            Group(stage, layout.device_matrix, c.device_dims),
                                            WireBytes(shardlab::Collective::kReduceScatter, c.bytes, OutputDType(op))));
    }
    for (Task& t : ContextGathers(stage, index, ".again")) stage.backward.push_back(std::move(t));
    if (const double cast = Fp8Cast(index, true); cast > 0)
      stage.backward.push_back(Compute(op.name + "/grad_fp8_cast", index, 0, cast, OutputDType(op), false));
    backward_task_of_op_[index] = static_cast<int>(stage.backward.size());
    const double share = BackwardShare(index);
    stage.backward.push_back(Compute(
        op.name + "/backward", index, share * layout.work.backward_flops,
        share * (std::max(0.0, layout.work.backward_bytes - fusion_[static_cast<size_t>(index)].saved_backward_bytes) +
                 fusion_[static_cast<size_t>(index)].extra_backward_bytes),
        PassDType(graph_, op, true), op.OnHost(), KernelOf(index, true)));
    // Half of a product's backward FLOPs form its second operand's gradient.
    if ((op.type == "MatMul" || op.type == "BatchMatMul") && Trained(op.inputs[1]) && share > 0)
      stage.backward.back().weight_gradient_fraction = 0.5 / share;
    for (const OpComm& c : layout.backward_comm) {
      const Tensor& input = graph_.tensor(op.inputs[c.input]);
      if (input.producer < 0) continue;  // dataset inputs need no gradient
      if (GatheredOnTheWayIn(index, c)) continue;
      stage.backward.push_back(Collective(stage, fmt::format("{}/grad.{}", op.name, OperatorName(c.type)), index,
                                          shardlab::Collective::kAllReduce,
                                          Group(stage, layout.device_matrix, c.device_dims),
                                          WireBytes(shardlab::Collective::kAllReduce, c.bytes, input.dtype)));
    }
    for (Task& t : Redistributions(stage, index, true)) stage.backward.push_back(std::move(t));
    for (Task& t : HostTransfers(index, true)) stage.backward.push_back(std::move(t));
    if (group >= 0 && offload_groups_[group].last_op == index) {
      // A layer with no layer after it to hide behind sends for its own activations just now.
      size_t wait = first_task;
      if (offload_groups_[group].prefetch_op == index)
        while (wait < stage.backward.size() && stage.backward[wait].pcie_copy && stage.backward[wait].overlapped)
          ++wait;
      if (wait < stage.backward.size()) stage.backward[wait].after_host_copies = true;
    }
  }

  // Where a parameter lives: the operator that first uses it (its stage, and
  // the last of its backwards to run), its slice, its mirror group, and how
  // many ways the parallel optimizer shards it.
  struct ParamShare {
    int tensor;
    int first_user;
    int input;  // at the first user
    double slice_elements;
    const OpComm* mirror;  // nullptr: fully sharded, no gradient aggregation
    int64_t shards;
  };

  std::vector<ParamShare> ParamShares() const {
    std::vector<ParamShare> shares;
    for (int t : graph_.Parameters()) {
      const auto& users = graph_.Consumers(t);
      if (users.empty()) continue;
      const Operator& first = graph_.op(users.front());
      ParamShare share{t, users.front(), 0, 0, nullptr, 1};
      share.input = static_cast<int>(std::find(first.inputs.begin(), first.inputs.end(), t) - first.inputs.begin());
      const OpLayout& layout = layouts_[share.first_user];
      const Shape slice = layout.inputs[share.input].SliceShape();
      share.slice_elements = static_cast<double>(ElementCount(slice));
      for (const OpComm& c : layout.mirror_comm)
        if (c.input == share.input) share.mirror = &c;
      share.shards = OptimizerShards(graph_.tensor(t), slice, share.mirror ? share.mirror->group_size : 1);
      shares.push_back(share);
    }
    return shares;
  }

  // When each operator's first forward task starts within the stage's
  // forward pass, in closed form.
  static std::map<int, double> ForwardStartOfOperators(const StageProgram& stage) {
    std::map<int, double> start;
    ClosedFormPass(PassSteps(stage.forward, 0, stage.forward.size()), stage.forward,
                   [&](const PassStep& step, double end, double) {
                     // The step begins after its waits for prefetches and copies.
                     const double begin = end - step.ClosedFormSeconds(stage.forward);
                     for (int t = step.first_task; t < step.end_task; ++t)
                       if (stage.forward[t].op >= 0) start.emplace(stage.forward[t].op, begin);
                   });
    return start;
  }

  // An operator's start from ForwardStartOfOperators; one without a task of
  // its own (run inside its producer's kernel) starts with the task before it.
  static double ForwardStart(const std::map<int, double>& start, int op) {
    auto it = start.upper_bound(op);
    return it == start.begin() ? 0 : std::prev(it)->second;
  }

  static std::string GatherName(size_t index) { return fmt::format("optimizer_shard/allgather.{}", index); }

  // Gradient communication: per (group, fusion id) in MindSpore's order, split into buckets.
  // Bytes per element of a parameter's gradient as it is communicated.
  double GradientWireBytes(const Tensor& parameter) const {
    return p_.gradient_fp32_sync || p_.force_fp32_communication ? 4.0
                                                                : static_cast<double>(DTypeBytes(parameter.dtype));
  }

  void GradientsAndOptimizer(StageProgram& stage) {
    const bool data_parallel = p_.parallel_mode == ParallelMode::kDataParallel;
    const bool hybrid = p_.parallel_mode == ParallelMode::kHybridParallel;
    std::vector<ParamShare> params;
    for (const ParamShare& share : shares_)
      if (graph_.tensor(share.tensor).requires_grad && graph_.op(share.first_user).pipeline_stage == stage.stage)
        params.push_back(share);
    // Fusion order: parameter order in data_parallel (DistributedGradReducer's
    // index), backward execution order (last user first) otherwise.
    if (!data_parallel)
      std::stable_sort(params.begin(), params.end(),
                       [](const ParamShare& a, const ParamShare& b) { return a.first_user > b.first_user; });
    const std::map<int, double> forward_start = ForwardStartOfOperators(stage);
    // MindSpore fuses gradients with the same group, reduction and fusion
    // id; dualpipe's two copies, whose gradients complete in different
    // passes, fuse apart.
    using Key = std::tuple<bool, int, bool, int64_t>;  // mirrored copy, group, optimizer-sharded, fusion id
    std::map<Key, std::vector<ParamShare>> by_key;
    std::vector<Key> key_order;
    double optimizer_elements = 0;
    for (const ParamShare& share : params) {
      const Tensor& tensor = graph_.tensor(share.tensor);
      optimizer_elements += share.slice_elements / static_cast<double>(share.shards);
      if (run_.simulation.pipeline_schedule == PipelineSchedule::kDualPipe)
        stage.mirror_gradient_bytes +=
            share.slice_elements / static_cast<double>(share.shards) * GradientWireBytes(tensor);
      if (!share.mirror) continue;  // fully sharded: no gradient aggregation
      if (hybrid && tensor.layerwise_parallel) continue;
      const Key key{share.first_user >= mirror_from_,
                    Group(stage, layouts_[share.first_user].device_matrix, share.mirror->device_dims), share.shards > 1,
                    tensor.comm_fusion};
      if (!by_key.count(key)) key_order.push_back(key);
      by_key[key].push_back(share);
    }
    for (size_t list_index = 0; list_index < key_order.size(); ++list_index) {
      const auto& [copy, group, sharded, fusion] = key_order[list_index];
      // Lambdas below cannot capture a structured binding (clang 14).
      const int64_t fusion_id = fusion;
      const int64_t group_size = stage.groups[group].size;
      const Key& key = key_order[list_index];
      const auto& list = by_key[key];
      std::vector<double> bytes, weight_bytes;
      for (const ParamShare& share : list) {
        const Tensor& tensor = graph_.tensor(share.tensor);
        const double slice = share.slice_elements;
        bytes.push_back(slice * GradientWireBytes(tensor));
        // Level3 gathers device weights at each use; host weights still once per step.
        const bool at_use = GathersWeightsJustInTime() && !host_only_[share.tensor];
        weight_bytes.push_back(at_use ? 0.0
                                      : slice * StoredBytes(share) / static_cast<double>(stage.groups[group].size));
      }
      auto split = [&](const std::vector<double>& sizes, const FusionSetting& setting) {
        std::vector<std::pair<size_t, size_t>> ranges;
        if (fusion_id == 0) {  // fusion id 0: never fused
          for (size_t i = 0; i < sizes.size(); ++i) ranges.emplace_back(i, i + 1);
          return ranges;
        }
        if (run_.stack.overlap_grad_reduce && setting.mode == FusionSetting::Mode::kDefault &&
            p_.comm_fusion.openstate) {
          // Each gradient's chunk: the one whose share of the backward holds
          // its first user's backward, as BucketChunks finds a bucket's (under
          // a split backward BucketChunks reads the weight-gradient pass's
          // shares, whose boundaries may fall a task apart).
          const std::vector<int64_t> chunk_of_task = ChunkOfEachTask(stage.backward, Chunks(), true);
          std::vector<double> elements;
          std::vector<int64_t> chunk;
          for (const ParamShare& share : list) {
            elements.push_back(share.slice_elements);
            chunk.push_back(chunk_of_task[static_cast<size_t>(backward_task_of_op_.at(share.first_user))]);
          }
          return MegatronDdpBuckets(elements, chunk, group_size);
        }
        return SplitIntoBuckets(sizes, setting, p_.comm_fusion.openstate, data_parallel, p_.enable_parallel_optimizer);
      };
      // Optimizer-sharded gradients fuse as ReduceScatters, by their own setting.
      for (auto [begin, end] : split(bytes, sharded ? p_.comm_fusion.reducescatter : p_.comm_fusion.allreduce)) {
        GradientBucket bucket;
        bucket.list = static_cast<int>(list_index);
        bucket.position = begin;
        bucket.group = group;
        bucket.collective = sharded ? shardlab::Collective::kReduceScatter : shardlab::Collective::kAllReduce;
        bucket.every_micro_batch = sharded && AccumulatesShardedGradients(p_);
        for (size_t i = begin; i < end; ++i) {
          bucket.parameters.push_back(list[i].tensor);
          bucket.bytes += bytes[i];
          bucket.elements += list[i].slice_elements;
          // A gradient is complete after the backward of its first user, which runs last.
          bucket.ready_after = std::max(bucket.ready_after, backward_task_of_op_.at(list[i].first_user));
        }
        const GroupPlacement& placement = stage.groups[group].placement;
        bucket.algorithm = ChooseAlgorithm(bucket.collective, bucket.bytes, placement, run_.cluster,
                                           run_.simulation.collective_algorithms);
        const CollectiveTiming timing =
            TimeCollective(bucket.collective, bucket.algorithm, bucket.bytes, placement, run_.cluster);
        bucket.seconds = timing.seconds;
        bucket.library = timing.library;
        bucket.compute_share = timing.compute_share;
        stage.buckets.push_back(bucket);
      }
      // The parallel optimizer gathers the updated weight shards before the
      // next first forward, fused by the AllGather setting (on each rank's
      // shard); level3 gathers device weights at each use instead.
      if (!sharded) continue;
      for (auto [begin, end] : split(weight_bytes, p_.comm_fusion.allgather)) {
        double gathered = 0;
        for (size_t i = begin; i < end; ++i) gathered += weight_bytes[i];
        if (gathered == 0) continue;
        Task gather = Collective(stage, GatherName(stage.step_start.size()), -1, shardlab::Collective::kAllGather,
                                 group, gathered);
        gather.dimension = CommDimension::kData;
        if (run_.stack.overlap_param_gather) {
          // Overlapped: the forward may run until the first of its weights is used.
          gather.lead_seconds = std::numeric_limits<double>::infinity();
          for (size_t i = begin; i < end; ++i)
            gather.lead_seconds = std::min(gather.lead_seconds, ForwardStart(forward_start, list[i].first_user));
        }
        stage.step_start.push_back(gather);
      }
    }
    if (run_.stack.overlap_param_gather) {
      // Gathered in the order the forward uses the weights.
      std::stable_sort(stage.step_start.begin(), stage.step_start.end(),
                       [](const Task& a, const Task& b) { return a.lead_seconds < b.lead_seconds; });
      for (size_t i = 0; i < stage.step_start.size(); ++i) stage.step_start[i].name = GatherName(i);
    }
    // The communication stream runs the fused collectives in execution
    // order: as their gradients become ready (MindSpore's kernel order
    // follows the data dependencies, not the fusion index).
    std::stable_sort(stage.buckets.begin(), stage.buckets.end(),
                     [](const GradientBucket& a, const GradientBucket& b) { return a.ready_after < b.ready_after; });
    // Adam-style update: about 10 FLOPs per owned element, reading and writing its states.
    const double state = OptimizerBytesPerElement(run_.simulation.optimizer, ComputeDType(run_.model), run_.stack);
    const bool offload = run_.simulation.optimizer == Optimizer::kAdamOffload;
    if (offload)  // the owned fp32 gradients go to the host...
      stage.optimizer.push_back(HostTransfer("optimizer/gradients_to_host", -1, 4 * optimizer_elements));
    Task update = Compute("optimizer/update", -1, 10 * optimizer_elements, optimizer_elements * (2 * state + 12),
                          DType::kFloat32, offload);
    // Offloaded, every device of the run on a server updates on the same host CPUs at once.
    if (offload) update.seconds *= static_cast<double>(std::min(run_.cluster.devices_per_server, p_.device_num));
    stage.optimizer.push_back(update);
    if (offload)  // ...and the updated weights come back in the model's dtype
      stage.optimizer.push_back(
          HostTransfer("optimizer/weights_to_device", -1,
                       optimizer_elements * static_cast<double>(DTypeBytes(ComputeDType(run_.model)))));
  }

  OptimizerLevel Level() const { return p_.parallel_optimizer_config.optimizer_level; }
  // Gradients of optimizer-sharded weights are kept as the owned shard:
  // level2 and level3, or level1 accumulating with gradient_accumulation_shard.
  bool ShardsGradients() const {
    return AccumulatesShardedGradients(p_) || (p_.enable_parallel_optimizer && Level() != OptimizerLevel::kLevel1);
  }
  bool GathersWeightsJustInTime() const { return p_.enable_parallel_optimizer && Level() == OptimizerLevel::kLevel3; }

  // The optimizer-sharded device parameters operator `op` reads.
  std::vector<const ParamShare*> ShardedWeightsOf(int op) const {
    std::vector<const ParamShare*> weights;
    for (int t : graph_.op(op).inputs) {
      const int s = share_of_tensor_[t];
      if (s < 0 || host_only_[t]) continue;
      const ParamShare& share = shares_[s];
      if (share.shards > 1 && share.mirror) weights.push_back(&share);
    }
    return weights;
  }

  // The bytes of operator `op`'s sharded weights once gathered (its slices).
  double GatheredWeightBytes(int op) const {
    double bytes = 0;
    for (const ParamShare* share : ShardedWeightsOf(op)) bytes += share->slice_elements * StoredBytes(*share);
    return bytes;
  }

  // Whether the weight of `share` feeds an FP8 GEMM.
  bool Fp8Weight(const ParamShare& share) const { return Fp8GemmDType(graph_.op(share.first_user), false).has_value(); }

  // The bytes per element a device keeps of the weight (and gathers): its
  // dtype's, or one where the stack keeps FP8 GEMMs' weights in FP8.
  double StoredBytes(const ParamShare& share) const {
    if (run_.stack.fp8_param_gather && Fp8Weight(share)) return 1;
    return static_cast<double>(DTypeBytes(graph_.tensor(share.tensor).dtype));
  }

  // optimizer_level "level3" (ZeRO-3): a sharded weight is gathered before
  // each pass that uses it and freed after. The gather of an operator's (or
  // layer's) weights is prefetched: issued as the compute before it starts,
  // it runs on the prefetch stream (Task::prefetch) and the operator's first
  // compute waits for it (Task::prefetches_needed); blocking only when
  // nothing computes before it.
  void GatherWeightsJustInTime(StageProgram& stage) {
    std::vector<int> index_map;
    stage.forward = WithWeightGathers(stage, stage.forward, "forward", nullptr);
    stage.backward = WithWeightGathers(stage, stage.backward, "backward", &index_map);
    for (auto& [op, task] : backward_task_of_op_)
      if (graph_.op(op).pipeline_stage == stage.stage) task = index_map[task];
  }

  // A weight gather to insert before a task, and the task that first uses its weights.
  struct PlacedGather {
    Task gather;
    size_t consumer = 0;
  };

  std::vector<Task> WithWeightGathers(StageProgram& stage, const std::vector<Task>& tasks, const char* pass,
                                      std::vector<int>* index_map) {
    // Gathers to insert before task i.
    std::vector<std::vector<PlacedGather>> before(tasks.size() + 1);
    if (run_.stack.weight_gather == WeightGather::kLayer)
      LayerGathers(stage, tasks, pass, before);
    else
      OperatorGathers(stage, tasks, pass, before);
    // Each prefetch's place on the prefetch stream, for the task that waits for it.
    std::vector<int> needs(tasks.size(), 0);
    int prefetches = 0;
    std::vector<Task> out;
    out.reserve(tasks.size());
    if (index_map) index_map->assign(tasks.size(), 0);
    for (size_t i = 0; i < tasks.size(); ++i) {
      for (PlacedGather& g : before[i]) {
        if (g.gather.prefetch) needs[g.consumer] = std::max(needs[g.consumer], ++prefetches);
        out.push_back(std::move(g.gather));
      }
      if (index_map) (*index_map)[i] = static_cast<int>(out.size());
      out.push_back(tasks[i]);
      out.back().prefetches_needed = needs[i];
    }
    return out;
  }

  // The optimizer-shard group `share` is gathered over, and each device's shard of it in bytes.
  std::pair<int, double> GatherGroup(StageProgram& stage, const ParamShare& share) {
    const int group = Group(stage, layouts_[share.first_user].device_matrix, share.mirror->device_dims);
    return {group, share.slice_elements * StoredBytes(share) / static_cast<double>(stage.groups[group].size)};
  }

  // A prefetched gather runs on the prefetch stream. Where the engines cut a
  // stage's passes into virtual pipeline chunks that run apart, a prefetch
  // would cross from one chunk into the next: there it runs on the
  // communication stream beside the compute up to the next collective.
  Task GatherTask(StageProgram& stage, const std::string& name, int op, int group, double bytes, bool prefetched) {
    Task gather = Collective(stage, name, op, shardlab::Collective::kAllGather, group, bytes);
    gather.dimension = CommDimension::kData;
    const bool chunked = Chunks() > 1;
    (chunked ? gather.overlapped : gather.prefetch) = prefetched;
    return gather;
  }

  // weight_gather "layer": the layers in the order the pass first computes
  // in them, each layer's weights in one AllGather per group, issued when
  // the layer before it starts (blocking only for the first).
  void LayerGathers(StageProgram& stage, const std::vector<Task>& tasks, const char* pass,
                    std::vector<std::vector<PlacedGather>>& before) {
    struct Layer {
      std::string scope;
      size_t first = 0;             // its first compute task
      std::map<int, double> bytes;  // per group: the bytes of its weights each device holds
    };
    std::vector<Layer> layers;
    std::map<std::string, size_t> index_of;
    std::vector<bool> seen(graph_.operators().size(), false);
    for (size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      if (t.kind != Task::Kind::kCompute || t.pcie_copy || t.op < 0) continue;
      const std::string scope = ScopeOf(graph_.op(t.op).name);
      const auto [at, fresh] = index_of.emplace(scope, layers.size());
      if (fresh) layers.push_back({scope, i, {}});
      if (seen[t.op]) continue;
      seen[t.op] = true;
      for (const ParamShare* share : ShardedWeightsOf(t.op)) {
        const auto [group, bytes] = GatherGroup(stage, *share);
        layers[at->second].bytes[group] += bytes;
      }
    }
    for (size_t k = 0; k < layers.size(); ++k)
      for (const auto& [group, bytes] : layers[k].bytes)
        before[k > 0 ? layers[k - 1].first : layers[k].first].push_back(
            {GatherTask(stage, fmt::format("{}/{}.weight_gather", layers[k].scope, pass), tasks[layers[k].first].op,
                        group, bytes, k > 0),
             layers[k].first});
  }

  // weight_gather "operator": each operator's weights before its first
  // compute task, issued when the compute task before it starts.
  void OperatorGathers(StageProgram& stage, const std::vector<Task>& tasks, const char* pass,
                       std::vector<std::vector<PlacedGather>>& before) {
    std::vector<bool> gathered(graph_.operators().size(), false);
    int previous_compute = -1;
    for (size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      if (t.kind != Task::Kind::kCompute || t.pcie_copy || t.op < 0) continue;
      if (!gathered[t.op]) {
        gathered[t.op] = true;
        for (const ParamShare* share : ShardedWeightsOf(t.op)) {
          const auto [group, bytes] = GatherGroup(stage, *share);
          before[previous_compute >= 0 ? previous_compute : i].push_back(
              {GatherTask(stage, fmt::format("{}/{}.weight_gather", graph_.op(t.op).name, pass), t.op, group, bytes,
                          previous_compute >= 0),
               i});
        }
      }
      previous_compute = static_cast<int>(i);
    }
  }

  // How many ways the parallel optimizer shards a parameter (1: not at all).
  int64_t OptimizerShards(const Tensor& tensor, const Shape& slice, int64_t replicas) const {
    // A frozen weight has no optimizer state to shard (MindSpore shards trainable parameters only).
    if (!p_.enable_parallel_optimizer || replicas <= 1 || !tensor.requires_grad) return 1;
    if (!tensor.parallel_optimizer) return 1;
    int64_t shards = replicas;
    const int64_t limit = p_.parallel_optimizer_config.optimizer_weight_shard_size;
    if (limit > 1) shards = std::min(shards, limit);
    if (run_.stack.flat_optimizer_sharding) return shards;
    if (static_cast<double>(tensor.bytes()) / 1024.0 <
        static_cast<double>(p_.parallel_optimizer_config.parallel_optimizer_threshold))
      return 1;
    if (slice.empty() || slice[0] % shards != 0) return 1;
    return shards;
  }

  // Activations crossing a stage boundary travel to the next stage (and their gradients back).
  void Sends(Plan& plan) {
    for (size_t i = 0; i < graph_.tensors().size(); ++i) {
      const Tensor& t = graph_.tensor(static_cast<int>(i));
      if (t.producer < 0) continue;
      int64_t last_stage = graph_.op(t.producer).pipeline_stage;
      for (int user : graph_.Consumers(static_cast<int>(i)))
        last_stage = std::max(last_stage, graph_.op(user).pipeline_stage);
      const Operator& producer = graph_.op(t.producer);
      const double bytes = OutputSliceBytes(static_cast<int>(i));
      for (int64_t s = producer.pipeline_stage; s < last_stage; ++s) {
        plan.stages[s].send_forward_bytes += bytes;
        plan.stages[s + 1].send_backward_bytes += bytes;
      }
    }
    for (auto& stage : plan.stages) {
      stage.blocking_sends = !run_.stack.overlap_pipeline_sends;
      if (stage.stage + 1 >= static_cast<int64_t>(plan.stages.size())) continue;
      const GroupPlacement pair = PlaceGroup({plan.Rank(stage.stage, 0), plan.Rank(stage.stage + 1, 0)}, run_.cluster);
      stage.send_seconds = CollectiveSeconds(shardlab::Collective::kSendRecv, CollectiveAlgorithm::kDirect,
                                             stage.send_forward_bytes, pair, run_.cluster);
    }
    // Chunks: the last stage sends on too, a hidden state the size of the
    // stage boundary before it, to the first stage (interleaved) or back to
    // the stage before it (zero_bubble_v's second arm, dualpipe's second
    // direction).
    const auto S = static_cast<int64_t>(plan.stages.size());
    if (plan.chunks > 1 && S > 1) {
      StageProgram& last = plan.stages.back();
      const StageProgram& peer = plan.stages[RunsTwoChunks(plan.schedule) ? S - 2 : 0];
      last.send_forward_bytes = plan.stages[S - 2].send_forward_bytes;
      const GroupPlacement pair = PlaceGroup({plan.Rank(last.stage, 0), plan.Rank(peer.stage, 0)}, run_.cluster);
      last.send_seconds = CollectiveSeconds(shardlab::Collective::kSendRecv, CollectiveAlgorithm::kDirect,
                                            last.send_forward_bytes, pair, run_.cluster);
    }
    // dualpipe: each stage's gradients to its mirror stage's devices and theirs back, at once.
    for (auto& stage : plan.stages) {
      if (stage.mirror_gradient_bytes <= 0) continue;
      const StageProgram& mirror = plan.stages[MirrorStage(stage.stage, S)];
      const GroupPlacement pair = PlaceGroup({plan.Rank(stage.stage, 0), plan.Rank(mirror.stage, 0)}, run_.cluster);
      stage.mirror_gradient_seconds = CollectiveSeconds(shardlab::Collective::kSendRecv, CollectiveAlgorithm::kDirect,
                                                        stage.mirror_gradient_bytes, pair, run_.cluster);
    }
  }

  // Parameters whose every user runs on the host (MindSpore places a
  // parameter with the operators that use it: an EmbeddingLookup table and
  // its CPU optimizer stay in host memory).
  std::vector<bool> HostOnlyParameters() const {
    std::vector<bool> device_use(graph_.tensors().size(), false), used(graph_.tensors().size(), false);
    for (const Operator& op : graph_.operators())
      for (int t : op.inputs) {
        used[t] = true;
        if (!op.OnHost()) device_use[t] = true;
      }
    std::vector<bool> host_only(graph_.tensors().size());
    for (size_t t = 0; t < host_only.size(); ++t) host_only[t] = used[t] && !device_use[t];
    return host_only;
  }

  // The most a stage holds at once of its micro-batches' activations (`kept`
  // per virtual pipeline chunk) and, when the backward is split, of what a
  // backward's input-gradient pass leaves for its weight-gradient pass
  // (`held`, per chunk), from its schedule: every forward whose backward has
  // not run yet holds its chunk's activations, every input-gradient pass
  // whose weight-gradient pass has not run yet its chunk's `held`. Sets the
  // most micro-batches in flight (1F1B: min(M, S - s); GPipe: M;
  // interleaved: Megatron's warm-up plus one, over the chunks) and what is
  // held for weight-gradient passes at the peak. Under sequence pipelining
  // `kept` is a sequence chunk's, and a micro-batch is seq_chunks passes.
  static double PeakInFlight(const Plan& plan, int64_t stage, const std::vector<double>& kept,
                             const std::vector<double>& held, double* micro_batches, double* held_at_peak) {
    int64_t forwards = 0;
    double bytes = 0, held_bytes = 0, peak = -1;
    // Of one micro-batch: a dualpipe micro-batch runs one chunk on a stage.
    const double passes = static_cast<double>(plan.chunks / plan.model_copies() * plan.seq_chunks);
    *micro_batches = 0;
    // A unit's forward holds its activations while its backward runs: counted first.
    std::vector<ScheduleItem> order = StageOrder(plan, stage);
    for (size_t begin = 0; begin < order.size();) {
      const size_t end = UnitEnd(order, begin);
      std::stable_partition(order.begin() + static_cast<std::ptrdiff_t>(begin),
                            order.begin() + static_cast<std::ptrdiff_t>(end),
                            [](const ScheduleItem& i) { return i.forward; });
      begin = end;
    }
    for (const ScheduleItem& item : order) {
      const auto chunk = static_cast<size_t>(item.chunk);
      if (item.forward) {
        ++forwards;
        bytes += kept[chunk];
      } else if (item.weight_gradient) {
        held_bytes -= held[chunk];
      } else {
        --forwards;
        bytes -= kept[chunk];
        if (SplitsBackward(plan.schedule)) held_bytes += held[chunk];
      }
      *micro_batches = std::max(*micro_batches, static_cast<double>(forwards) / passes);
      if (bytes + held_bytes > peak) {
        peak = bytes + held_bytes;
        *held_at_peak = held_bytes;
      }
    }
    return std::max(peak, 0.0);
  }

  // The virtual pipeline chunk each of the stage's operators runs in: that
  // of its first forward task (ChunkOfTask), or, for one without a task of
  // its own (a view, a kernel fused into the one before), of the operator
  // before it on the stage. Per graph operator.
  std::vector<int64_t> ChunkOfOperators(const Plan& plan, const StageProgram& stage) const {
    const size_t ops = graph_.operators().size();
    std::vector<int64_t> chunk(ops, -1);
    const auto n = static_cast<int64_t>(stage.forward.size());
    for (int64_t i = 0; i < n; ++i) {
      const int op = stage.forward[static_cast<size_t>(i)].op;
      if (op >= 0 && chunk[static_cast<size_t>(op)] < 0)
        chunk[static_cast<size_t>(op)] = plan.schedule == PipelineSchedule::kDualPipe ? (op >= mirror_from_ ? 1 : 0)
                                                                                      : ChunkOfTask(n, plan.chunks, i);
    }
    int64_t before = 0;
    for (size_t i = 0; i < ops; ++i) {
      if (graph_.op(static_cast<int>(i)).pipeline_stage != stage.stage) continue;
      if (chunk[i] < 0) chunk[i] = before;
      before = chunk[i];
    }
    return chunk;
  }

  // What one micro-batch's input-gradient pass leaves for its weight-gradient
  // pass: each trained product's first operand and its output's gradient
  // (dB = A^T dC), each tensor once.
  // Per virtual pipeline chunk (`chunk_of_op`, ChunkOfOperators).
  std::vector<double> HeldForWeightGradients(const Plan& plan, int64_t stage,
                                             const std::vector<int64_t>& chunk_of_op) const {
    SavedActivations operands, gradients;  // apart: a product's output may be the next one's operand
    for (size_t i = 0; i < graph_.operators().size(); ++i) {
      const int index = static_cast<int>(i);
      const Operator& op = graph_.op(index);
      if (op.pipeline_stage != stage || op.OnHost()) continue;
      if ((op.type != "MatMul" && op.type != "BatchMatMul") || !Trained(op.inputs[1])) continue;
      operands.chunk = gradients.chunk = chunk_of_op[i];
      const int a = op.inputs[0];
      operands.Keep(Storage(a), SliceBytes(layouts_[index].inputs[0], graph_.tensor(a).dtype));
      gradients.Keep(op.outputs[0], OutputSliceBytes(op.outputs[0]));
    }
    std::vector<double> held = operands.ByChunk(plan.chunks);
    const std::vector<double> more = gradients.ByChunk(plan.chunks);
    for (size_t c = 0; c < held.size(); ++c) held[c] += more[c];
    return held;
  }

  // The tensors one micro-batch keeps for its backward, each counted once.
  struct SavedActivations {
    std::map<int, double> tensors;  // tensor -> bytes
    double masks = 0;               // Dropout's one-byte masks
    // The virtual pipeline chunk of the operator being saved for, and the
    // chunk each tensor was first kept for (it lives with that chunk's pass).
    int64_t chunk = 0;
    std::map<int, int64_t> chunk_of;

    void Keep(int tensor, double bytes) {
      tensors[tensor] = std::max(tensors[tensor], bytes);
      chunk_of.emplace(tensor, chunk);
    }
    // What each of `chunks` chunks keeps (the masks spread evenly).
    std::vector<double> ByChunk(int64_t chunks) const {
      std::vector<double> out(static_cast<size_t>(chunks), masks / static_cast<double>(chunks));
      for (const auto& [tensor, bytes] : tensors) out[static_cast<size_t>(chunk_of.at(tensor))] += bytes;
      return out;
    }
    double Bytes() const {
      double sum = masks;
      for (const auto& [tensor, bytes] : tensors) sum += bytes;
      return sum;
    }
  };

  // One device's slice of an operator output as its producer lays it out.
  double OutputSliceBytes(int tensor) const { return SliceBytes(ProducerLayout(tensor), graph_.tensor(tensor).dtype); }

  // The tensor whose memory `tensor` is: a Reshape or Flatten output is a
  // view of its input.
  int Storage(int tensor) const {
    for (;;) {
      const int producer = graph_.tensor(tensor).producer;
      if (producer < 0) return tensor;
      if (!graph_.op(producer).IsView()) return tensor;
      tensor = graph_.op(producer).inputs[0];
    }
  }

  // Adds what operator `index`'s backward reads of its forward to `saved`.
  // An input is kept at the smaller of its producer's slice and the
  // operator's: a sequence-parallel activation gathered for a GEMM is kept
  // as its shard and gathered again for the backward (Megatron-SP). An FP8
  // GEMM keeps its activation operand as the FP8 copy it computed with, a
  // byte per element (Transformer Engine). A fused element-wise chain keeps
  // what it read, not its intermediates (KeepInput).
  void SaveForBackward(int index, SavedActivations& saved) const {
    const Operator& op = graph_.op(index);
    const SavedTensors s = SavedForBackward(op);
    const bool fp8 = Fp8GemmDType(op, false).has_value();
    for (int pos : s.inputs) KeepInput(index, pos, fp8, saved);
    for (int pos : s.outputs) saved.Keep(op.outputs[pos], OutputSliceBytes(op.outputs[pos]));
    if (s.mask) saved.masks += static_cast<double>(ElementCount(layouts_[index].outputs[0].SliceShape()));
  }

  // Whether tensor `t` is a weight that gets no gradient (frozen: a LoRA
  // fine-tune's base model, BatchNorm's statistics).
  bool Frozen(int t) const { return graph_.tensor(t).is_parameter() && !graph_.tensor(t).requires_grad; }
  bool Trained(int t) const { return graph_.tensor(t).is_parameter() && graph_.tensor(t).requires_grad; }

  double BackwardShare(int index) const { return shardlab::BackwardShare(graph_, graph_.op(index)); }

  // Whether tensor `t` comes from a recompute segment that recomputes it for
  // the operators after it too (mla_up_proj: Megatron's CheckpointWithoutOutput).
  bool OutputsRecomputed(int t) const {
    const int producer = graph_.tensor(t).producer;
    return producer >= 0 && graph_.op(producer).recompute && graph_.op(producer).BoolAttr("outputs_recomputed", false);
  }

  // Keeps input `pos` of operator `index` for its backward. An input computed
  // inside the same fused kernel was never written: the chain's backward
  // recomputes it from the chain's own inputs, which are kept instead.
  void KeepInput(int index, int pos, bool fp8, SavedActivations& saved) const {
    const Operator& op = graph_.op(index);
    const int t = op.inputs[static_cast<size_t>(pos)];
    const Tensor& tensor = graph_.tensor(t);
    if (tensor.is_parameter()) return;
    // Recomputed by its own run before this backward (a recomputed operator of that run keeps it meanwhile).
    if (OutputsRecomputed(t) && !SameSegment(tensor.producer, index)) return;
    // A product keeps each operand for the other's gradient: none for a frozen weight.
    if ((op.type == "MatMul" || op.type == "BatchMatMul") && pos < 2 && Frozen(op.inputs[1 - pos])) return;
    if (fusion_[static_cast<size_t>(index)].InRegisters(pos)) {
      const size_t inputs = graph_.op(tensor.producer).inputs.size();
      for (size_t p = 0; p < inputs; ++p) KeepInput(tensor.producer, static_cast<int>(p), false, saved);
      return;
    }
    double bytes = SliceBytes(layouts_[index].inputs[pos], tensor.dtype);
    if (tensor.producer >= 0) bytes = std::min(bytes, OutputSliceBytes(t));
    if (fp8) bytes /= static_cast<double>(DTypeBytes(tensor.dtype));
    saved.Keep(Storage(t), bytes);
  }

  void Memory(const Plan& plan, StageProgram& stage) {
    MemoryBreakdown& m = stage.memory;
    for (const ParamShare& share : shares_) {
      if (graph_.op(share.first_user).pipeline_stage != stage.stage) continue;
      const Tensor& tensor = graph_.tensor(share.tensor);
      const double slice = share.slice_elements;
      const double owned = slice / static_cast<double>(share.shards);
      const double dtype = static_cast<double>(DTypeBytes(tensor.dtype));
      // A sharded weight is gathered back to its operator slice for compute
      // and kept for the step (level1, level2): the working copy is the whole
      // slice. Level3 keeps only the owned shard (the gathered copies are
      // counted below, as buffers).
      const bool sharded_weight =
          GathersWeightsJustInTime() && share.shards > 1 && share.mirror && !host_only_[share.tensor];
      double parameters = (sharded_weight ? owned : slice) * StoredBytes(share), gradients = 0, states = 0;
      // An FP8 GEMM's weight is also kept cast to FP8 for the step (one byte
      // per element), unless FP8 is how it is kept.
      if (Fp8Weight(share) && !sharded_weight && !run_.stack.fp8_param_gather) parameters += slice;
      if (plan.training && tensor.requires_grad) {
        // Gradients live in the stack's gradient buffer: the parameter's
        // dtype (MindSpore's accumulation clones), or the dtype they are
        // reduced in (Megatron's DDP buffer, allocated for the whole step
        // whatever the micro-batch count). Sharded with the optimizer when asked.
        const bool fp32_buffer = run_.stack.gradient_buffer == GradientBuffer::kReduce &&
                                 (p_.gradient_fp32_sync || p_.force_fp32_communication);
        const double grad_elements = ShardsGradients() ? owned : slice;
        gradients = grad_elements * (fp32_buffer ? 4.0 : dtype);
        states = owned * OptimizerBytesPerElement(run_.simulation.optimizer, tensor.dtype, run_.stack);
      }
      if (host_only_[share.tensor]) {
        m.host += parameters + gradients + states;
        continue;
      }
      if (run_.simulation.optimizer == Optimizer::kAdamOffload) {
        m.host += states;
        states = 0;
      }
      m.parameters += parameters;
      m.gradients += gradients;
      m.optimizer_states += states;
      // MindSpore stores a sharded weight as its shard and gathers the rest
      // into a graph tensor that lives until its backward's last read
      // (Megatron's distributed optimizer gathers into the persistent
      // parameter buffer instead).
      if (share.shards > 1 && share.mirror && !sharded_weight && !run_.stack.flat_optimizer_sharding)
        m.gathered_weights += (slice - owned) * StoredBytes(share);
    }
    // Activations kept for backward: what each operator's backward reads
    // (SavedForBackward), each tensor once however many operators read it.
    // A recompute segment keeps only its inputs from outside it (the previous
    // segment's output, or what selective recompute starts from) and is
    // rematerialised one segment at a time, its saved tensors then live together.
    SavedActivations device, host, recomputing;
    std::vector<SavedActivations> offloaded(offload_groups_.size());
    double largest_segment = 0, largest_output = 0;
    const std::vector<int64_t> chunk_of_op = ChunkOfOperators(plan, stage);
    for (size_t i = 0; i < graph_.operators().size(); ++i) {
      const int index = static_cast<int>(i);
      const Operator& op = graph_.op(index);
      if (op.pipeline_stage != stage.stage) continue;
      for (int t : op.outputs) largest_output = std::max(largest_output, OutputSliceBytes(t));
      if (!plan.training) continue;
      const int group = OffloadGroupOf(index);
      SavedActivations& into = op.OnHost() ? host : group >= 0 ? offloaded[static_cast<size_t>(group)] : device;
      into.chunk = chunk_of_op[i];
      if (!op.recompute) {
        SaveForBackward(index, into);
        continue;
      }
      SaveForBackward(index, recomputing);
      largest_segment = std::max(largest_segment, recomputing.Bytes());
      for (int t : op.inputs) {
        const int producer = graph_.tensor(t).producer;
        if (producer >= 0 && !SameSegment(producer, index) && !OutputsRecomputed(t))
          into.Keep(Storage(t), OutputSliceBytes(t));
      }
      if (index + 1 == static_cast<int>(graph_.operators().size()) || !SameSegment(index, index + 1)) recomputing = {};
    }
    // Offloaded layers' activations live in host memory between their
    // forward and backward; on the device, the layer computing and the one
    // copying (out in forward, back in backward), when both are offloaded. A
    // tensor the device keeps anyway (the next layer reads it) stays there.
    double offloaded_bytes = 0, largest_offloaded = 0, offloaded_layers = 0;
    for (SavedActivations& layer : offloaded) {  // empty for the other stages' layers
      for (const auto& [tensor, bytes] : device.tensors) layer.tensors.erase(tensor);
      if (layer.Bytes() == 0) continue;
      offloaded_bytes += layer.Bytes();
      largest_offloaded = std::max(largest_offloaded, layer.Bytes());
      ++offloaded_layers;
    }
    const double offload_buffers = std::min(2.0, offloaded_layers) * largest_offloaded;
    const double kept = device.Bytes(), host_kept = host.Bytes() + offloaded_bytes;
    if (plan.training) {
      const double seq_chunks = static_cast<double>(plan.seq_chunks);
      m.activations_per_micro_batch = kept * seq_chunks;
      const std::vector<double> held = stage.splits_backward
                                           ? HeldForWeightGradients(plan, stage.stage, chunk_of_op)
                                           : std::vector<double>(static_cast<size_t>(plan.chunks), 0.0);
      const double in_flight = PeakInFlight(plan, stage.stage, device.ByChunk(plan.chunks), held,
                                            &m.micro_batches_in_flight, &m.held_for_weight_gradients);
      m.activations = in_flight + largest_segment + offload_buffers;
      m.host += host_kept * m.micro_batches_in_flight * seq_chunks;
    } else {
      m.activations_per_micro_batch = 2 * largest_output;  // inference frees what it has consumed
      m.activations = m.activations_per_micro_batch;
    }
    // Gradient buckets are views of the gradients (Megatron's contiguous
    // grad buffer, MindSpore's fused communication inputs allocated
    // contiguously): no buffer of their own.
    if (GathersWeightsJustInTime()) {
      // Level3: the gathered weights of the operator computing and of the
      // one being prefetched; under recompute a segment's weights, gathered
      // for its recomputed forward, stay until their backwards have run. By
      // layer (weight_gather "layer"): the layer computing and the next.
      double buffers = 0;
      if (run_.stack.weight_gather == WeightGather::kLayer) {
        std::map<std::string, double> by_layer;
        for (size_t i = 0; i < graph_.operators().size(); ++i)
          if (graph_.op(static_cast<int>(i)).pipeline_stage == stage.stage)
            by_layer[ScopeOf(graph_.op(static_cast<int>(i)).name)] += GatheredWeightBytes(static_cast<int>(i));
        for (const auto& [scope, bytes] : by_layer) buffers = std::max(buffers, 2 * bytes);
      } else {
        double largest = 0, segment = 0, largest_segment = 0;
        for (size_t i = 0; i < graph_.operators().size(); ++i) {
          const int op = static_cast<int>(i);
          if (graph_.op(op).pipeline_stage != stage.stage) continue;
          const double gathered = GatheredWeightBytes(op);
          largest = std::max(largest, gathered);
          segment = (i > 0 && SameSegment(op - 1, op) ? segment : 0) + gathered;
          largest_segment = std::max(largest_segment, segment);
        }
        buffers = std::max(2 * largest, largest_segment + largest);
      }
      m.communication_buffers = std::max(m.communication_buffers, buffers);
    }
    // Without a gradient buffer kept across the step (MindSpore's kParameter
    // with one micro-batch), gradients appear during the backward as it frees
    // the activations and the gathered weights it has consumed: the two peak
    // apart, at the backward's start and at its end (layers alike: in between
    // lies on the line).
    const bool transient_gradients =
        plan.micro_batches == 1 && run_.stack.gradient_buffer == GradientBuffer::kParameter;
    const double backward_peak =
        transient_gradients ? std::max(m.gradients, m.gathered_weights + m.activations) : m.gradients + m.activations;
    m.peak = m.parameters - (transient_gradients ? m.gathered_weights : 0) + m.optimizer_states + backward_peak +
             m.communication_buffers;
    const std::pair<double, const char*> parts[] = {{m.parameters, "parameters"},
                                                    {m.gradients, "gradients"},
                                                    {m.optimizer_states, "optimizer states"},
                                                    {m.activations, "activations"},
                                                    {m.communication_buffers, "communication buffers"}};
    // By bytes alone, the first listed winning a tie (comparing the pairs
    // would break ties by the names' addresses).
    const auto* dominant = std::max_element(std::begin(parts), std::end(parts),
                                            [](const auto& a, const auto& b) { return a.first < b.first; });
    m.dominant = dominant->second;
    m.dominant_bytes = dominant->first;
  }

  const RunSpec& run_;
  const Graph& graph_;
  const std::vector<OpLayout>& layouts_;
  const bool own_batch_;
  const int mirror_from_;
  const ParallelConfig& p_;
  const RankPlacement placement_;
  const std::vector<FusedKernel> fusion_;  // per operator: runs inside its producer's kernel
  // Sequence parallelism: products whose partial sums meet in a ReduceScatter of their output rows.
  const bool sequence_parallel_;
  const int64_t seq_chunks_;               // passes of each micro-batch's sequences (seq_split_num)
  std::map<int, int> backward_task_of_op_;
  std::vector<ParamShare> shares_;
  std::vector<int> share_of_tensor_;  // per tensor: its index in shares_, -1 for none
  std::vector<bool> host_only_;       // per tensor: a parameter only host operators use
  std::vector<OffloadGroup> offload_groups_;
  std::vector<int> offload_group_of_op_;  // per operator: its offload group, -1 for none (empty: none at all)
};

}  // namespace

std::vector<std::pair<size_t, size_t>> MegatronDdpBuckets(const std::vector<double>& elements,
                                                          const std::vector<int64_t>& chunk, int64_t group_size) {
  const double bucket = std::max(40e6, 1e6 * static_cast<double>(group_size));
  std::vector<std::pair<size_t, size_t>> ranges;
  double filled = 0;
  size_t end = elements.size();
  for (size_t i = elements.size(); i-- > 0;) {
    filled += elements[i];
    if (filled < bucket && i > 0 && chunk[i - 1] == chunk[i]) continue;
    ranges.emplace_back(i, end);
    end = i;
    filled = 0;
  }
  return ranges;
}

std::vector<std::pair<size_t, size_t>> SplitIntoBuckets(const std::vector<double>& bytes, const FusionSetting& f,
                                                        bool openstate, bool data_parallel, bool parallel_optimizer) {
  const size_t n = bytes.size();
  std::vector<std::pair<size_t, size_t>> ranges;
  if (n == 0) return ranges;
  if (!openstate) {
    for (size_t i = 0; i < n; ++i) ranges.emplace_back(i, i + 1);
    return ranges;
  }
  switch (f.mode) {
    case FusionSetting::Mode::kDefault:
      ranges.emplace_back(0, n);
      return ranges;
    case FusionSetting::Mode::kIndex: {
      // Inclusive end indices; indices past the last gradient are skipped
      // (MindSpore warns); ignored altogether with the parallel optimizer.
      size_t begin = 0;
      if (!parallel_optimizer)
        for (int64_t index : f.indices) {
          if (index < 0 || static_cast<size_t>(index) >= n - 1) continue;
          ranges.emplace_back(begin, static_cast<size_t>(index) + 1);
          begin = static_cast<size_t>(index) + 1;
        }
      ranges.emplace_back(begin, n);
      return ranges;
    }
    case FusionSetting::Mode::kAuto:
    case FusionSetting::Mode::kSize:
      break;
  }
  if (data_parallel) {
    // The backend's AllReduce split (GetAllReduceSplitSegment), threshold MB
    // x 262144 bytes: the gradient that would pass it joins the bucket and
    // closes it (alone when the bucket was empty), and the count restarts
    // from zero.
    const double threshold = static_cast<double>(f.size_mb) * 262144.0;
    size_t begin = 0;
    double accumulated = 0;
    for (size_t i = 0; i < n; ++i) {
      if (accumulated + bytes[i] > threshold) {
        ranges.emplace_back(begin, i + 1);
        begin = i + 1;
        accumulated = 0;
      } else {
        accumulated += bytes[i];
      }
    }
    if (begin < n) ranges.emplace_back(begin, n);
    return ranges;
  }
  // The frontend's fusion ids (semi/auto parallel): a remaining budget that
  // a gradient either fits in, or resets to the full threshold with a new id
  // (without being charged to it: MindSpore's quirk). MB x 2^20 / 4 elements
  // of 4 bytes is MB x 2^20 bytes.
  const double threshold = static_cast<double>(f.size_mb) * 1048576.0;
  double budget = threshold;
  int id = 1;
  std::vector<int> ids(n);
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] < budget) {
      budget -= bytes[i];
    } else {
      budget = threshold;
      ++id;
    }
    ids[i] = i == 0 ? 1 : id;
  }
  size_t begin = 0;
  for (size_t i = 1; i <= n; ++i)
    if (i == n || ids[i] != ids[i - 1]) {
      ranges.emplace_back(begin, i);
      begin = i;
    }
  return ranges;
}

bool AccumulatesShardedGradients(const ParallelConfig& p) {
  return p.enable_parallel_optimizer && p.micro_batch_num > 1 &&
         (p.parallel_optimizer_config.gradient_accumulation_shard ||
          p.parallel_optimizer_config.optimizer_level != OptimizerLevel::kLevel1);
}

Plan LowerToPlan(const RunSpec& run, const ShardedGraph& sharded) {
  const auto ops = static_cast<int>(sharded.graph.operators().size());
  if (run.simulation.pipeline_schedule == PipelineSchedule::kDualPipe) {
    const ShardedGraph both = WithDualPipeCopy(sharded, run.parallel.pipeline_stages);
    return Lowering(run, both.graph, both.layouts, both.own_batch, ops).Run();
  }
  return Lowering(run, sharded.graph, sharded.layouts, sharded.own_batch, ops).Run();
}

}  // namespace shardlab
