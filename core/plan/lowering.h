// Lowering a sharded graph to a Plan: forward tasks in graph order with the
// redistributions and forward communication they need, backward tasks in
// reverse with recompute and the partial-gradient AllReduces, gradients fused
// into buckets exactly as MindSpore fuses them (all_reduce_fusion_config
// indices, comm_fusion size and auto modes, per-parameter fusion ids, one
// bucket by default), the parallel optimizer's gathers and scatters, pipeline
// sends, and the memory of every stage.
#pragma once

#include <vector>

#include "core/config/run_config.h"
#include "core/ops/sharded_graph.h"
#include "core/plan/plan.h"

namespace shardlab {

Plan LowerToPlan(const RunSpec& run, const ShardedGraph& sharded);

// gradient_accumulation_shard (or optimizer_level 2 or 3) in effect: with
// the parallel optimizer and several micro-batches, the accumulated gradients
// of optimizer-sharded weights are sharded too, so every micro-batch's gradients are
// reduce-scattered into them (GradientBucket::every_micro_batch).
bool AccumulatesShardedGradients(const ParallelConfig& parallel);

// Megatron's DDP buckets (overlap_grad_reduce) over the gradients of one
// group in fusion order, `elements` each, of model chunk `chunk` each:
// Megatron wraps each virtual pipeline chunk in its own DDP, so a bucket
// never holds two chunks' gradients. Within each run of one chunk, filled
// from the last (whose gradient the backward produces first), each closed
// once it holds max(40M, 1M x group_size) elements, and reduced in that order.
std::vector<std::pair<size_t, size_t>> MegatronDdpBuckets(const std::vector<double>& elements,
                                                          const std::vector<int64_t>& chunk, int64_t group_size);

// The gradients of one communication group in MindSpore's fusion order, split
// into buckets by one collective's fusion setting (`openstate` false: no
// fusion). `bytes` are the gradients' sizes in that order. Returns the
// buckets as [begin, end) ranges.
std::vector<std::pair<size_t, size_t>> SplitIntoBuckets(const std::vector<double>& bytes, const FusionSetting& setting,
                                                        bool openstate, bool data_parallel, bool parallel_optimizer);

}  // namespace shardlab
