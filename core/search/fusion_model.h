// The fast model of gradient fusion that `shardlab tune-fusion` searches
// with. A stage's gradients reach the communication stream in lists (one
// per group, collective and fusion id, in MindSpore's fusion order); a
// fusion setting cuts each list into buckets. A bucket's collective starts
// when its last gradient is ready and the previous bucket is done, so the
// time the stream runs past the last backward pass is computable from the
// backward timeline in closed form, as the analytical engine runs it. Under
// several chunks per stage each chunk's buckets wait for that chunk's last
// pass, as the engines run them (BucketChunks). The compute the buckets hold
// back from each pass beside them (BucketContentionSeconds: each chunk's last,
// and the other micro-batches' for every-micro-batch buckets) is the setting
// weighed's, delaying the passes after it; what they hold back on other
// stages stays the unfused timeline's, and the tuner
// verifies its best candidates with the engine. Not modelled: a final pass
// run inside an overlapped forward-backward unit (overlap_forward_backward),
// whose buckets the engines ready at the unit's end, without contention.
// Dynamic programming over split points finds the best split of a list.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/config/run_config.h"
#include "core/cost/collective_cost.h"
#include "core/graph/graph.h"
#include "core/ops/sharded_graph.h"

namespace shardlab {

struct FusionGradient {
  int tensor = -1;
  std::string name;
  double bytes = 0;  // on the wire, per device
  double elements = 0;  // per device
  double ready = 0;  // step time at which the gradient is complete (last micro-batch)
  size_t pass = 0;   // the FusionStage::passes entry whose pass completes it
};

// Gradients fused together: one group, one collective, one fusion id.
struct FusionList {
  Collective collective = Collective::kAllReduce;
  int64_t fusion_id = 1;                  // 0: never fused
  bool every_micro_batch = false;         // gradient_accumulation_shard: after every micro-batch's backward
  int64_t group_size = 1;                 // devices of its group
  std::vector<FusionGradient> gradients;  // fusion order
  std::function<double(double)> seconds;  // one bucket of these bytes
  std::function<double(double)> compute_share;  // of one bucket of these bytes (CollectiveTiming's)
  double Bytes() const;
};

// A chunk's last gradient pass of the step (FinalGradientPasses::is_chunk_last),
// which runs the buckets its gradients fill; under one chunk the step's last.
struct FusionPass {
  int64_t chunk = 0;
  double start = 0;    // the pass in the timeline the problem was built from,
  double end = 0;      // without what its buckets held back
  double compute = 0;  // FinalGradientComputeSeconds
  double held = 0;     // what its buckets held back there (BucketContentionSeconds)
  // The chunk's passes of other micro-batches there, each without what its
  // every-micro-batch buckets held back (other_held): those buckets run
  // after each too.
  std::vector<double> earlier_ends;
  double other_held = 0;
};

struct FusionStage {
  int64_t stage = 0;
  // Per chunk, in the order the stage runs them; the last is the step's last
  // gradient pass. A pass (this or another micro-batch's) whose buckets hold
  // back more or less than in the timeline moves every pass after it.
  std::vector<FusionPass> passes;
  double optimizer = 0;       // after the last bucket
  std::vector<FusionList> lists;
  const FusionPass& last() const { return passes.back(); }
};

struct FusionProblem {
  bool data_parallel = false;
  bool parallel_optimizer = false;
  bool openstate = true;
  bool megatron_ddp = false;               // the stack's overlap_grad_reduce: default fusion is Megatron's buckets
  FusionSetting allreduce, reducescatter;  // the run's settings
  std::vector<FusionStage> stages;
};

// A bucket as the fast model runs it.
struct FusionBucket {
  int list = 0;
  size_t begin = 0, end = 0;  // gradients [begin, end) of the list
  double bytes = 0;
  double ready = 0, start = 0, finish = 0;
  size_t pass = 0;  // of its last gradient (FusionGradient::pass)
};

struct FusionEstimate {
  double step_seconds = 0;
  int64_t critical_stage = 0;
  double tail_seconds = 0;            // stream time past the last backward pass, on the critical stage
  size_t collectives = 0;             // buckets on the critical stage
  std::vector<FusionBucket> buckets;  // of the critical stage
};

// Gradients, ready times and bucket costs of every stage, from the run's
// plan with fusion off and its analytical timeline.
FusionProblem BuildFusionProblem(const RunSpec& run, const ShardedGraph& sharded);

// The fast model's step time with `setting` for `op`'s lists (the other
// collective keeps the run's setting).
FusionEstimate Estimate(const FusionProblem& problem, Collective op, const FusionSetting& setting);

// Buckets of one list run alone on a stream, in order of readiness:
// the finish time of the last.
double FinishTime(const FusionList& list, const std::vector<std::pair<size_t, size_t>>& ranges);

// The optimal split of `list` into k buckets for every k in 1..max_buckets,
// by dynamic programming over split points (exact when readiness is
// monotone along the list, as it is in MindSpore's fusion order).
// result[k-1] holds the ranges in fusion order, empty where no split into
// k buckets exists. `first_alone_allowed` false forbids a first bucket of
// only gradient 0 (split index 0 is invalid in MindSpore).
std::vector<std::vector<std::pair<size_t, size_t>>> OptimalSplits(const FusionList& list, size_t max_buckets,
                                                                  bool first_alone_allowed);

// Index mode's inclusive end indices for ranges in fusion order ({} for one bucket).
std::vector<int64_t> SplitIndices(const std::vector<std::pair<size_t, size_t>>& ranges);

// The list of `op` with the most bytes on the stage whose tail matters most
// (the critical stage under the run's settings); {-1, -1} when there is none.
std::pair<int, int> MainList(const FusionProblem& problem, Collective op);

}  // namespace shardlab
