// A stage's passes as both engines walk them: each pass kind's steps per
// virtual pipeline chunk (ChunkSteps; a gradient bucket becomes ready inside
// a step, PassStep::TaskDoneSeconds, without breaking it), and the units
// of overlapped passes (overlap_forward_backward), each kind built the first
// time a stage's order reaches it. The analytical engine times these steps
// in closed form, SimGrid runs them, the report reads their collectives.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/plan/overlapped_unit.h"
#include "core/plan/pass_steps.h"
#include "core/plan/pipeline_schedule.h"
#include "core/plan/plan.h"

namespace shardlab {

class StagePasses {
 public:
  // `stage` must outlive this. `seq_chunks`: the sequence chunks of each
  // micro-batch (Plan::seq_chunks), whose passes' attention differs.
  StagePasses(const StageProgram& stage, int64_t chunks, int64_t seq_chunks, PassOverlap overlapped);

  // The steps of `item`'s pass on its chunk (and sequence chunk), over StageProgram::PassTasks(item).
  const std::vector<PassStep>& Steps(const ScheduleItem& item) const;

  // The unit of overlapped passes `items` (its kind: each item's forward,
  // weight gradient and chunk), over UnitTasks(). The reference stays valid.
  const UnitPass& Unit(const std::vector<ScheduleItem>& items);
  const std::vector<Task>& UnitTasks() const { return unit_tasks_; }

 private:
  using UnitKind = std::vector<std::tuple<bool, bool, int64_t>>;
  const StageProgram* stage_;
  int64_t chunks_, seq_chunks_;
  PassOverlap overlapped_;
  std::vector<std::vector<PassStep>> forward_, backward_, weight_gradient_;  // per chunk x seq_chunks + sequence chunk
  std::vector<Task> unit_tasks_;
  std::map<UnitKind, UnitPass> units_;
};

// `tasks` as sequence chunk `j` runs them: each task's seconds its chunk's
// (Task::seq_chunk_seconds).
std::vector<Task> SequenceChunkTasks(const std::vector<Task>& tasks, int64_t j);

// A micro-batch's gradients are complete with its gradient pass (the
// backward, or the weight-gradient pass when split) on chunk 0, the last its
// backward reaches (and its first sequence chunk, the last its backwards
// reach); the step's with its last such pass, on `final_chunk`
// (FinalGradientPasses::last_chunk: dualpipe's last may be chunk 1's). For
// each of the stage's gradient buckets: how long before that pass ends its
// last gradient exists (the whole pass when it came with another chunk or
// the input-gradient pass); `pass_seconds` gets the pass's closed-form
// duration. Both engines' and the fusion tuner's rule.
std::vector<double> BucketLeadSeconds(const StageProgram& stage, int64_t chunks, double* pass_seconds,
                                      int64_t final_chunk = 0);

// Per gradient bucket of the stage, the chunk whose gradient pass completes
// its gradients: the one whose share of the gradient tasks (ChunkTaskRange,
// reversed) holds its GradientBucket::ready_after. Under an interleaved
// schedule each chunk's buckets are reduced once that chunk's pass of a
// micro-batch ends, as Megatron's DDP does per model chunk and MindSpore per
// pipeline chunk, not when the micro-batch's last chunk does.
std::vector<int64_t> BucketChunks(const StageProgram& stage, int64_t chunks);

// How much longer the final gradient pass of chunk `final_chunk` computes
// because the gradient buckets it readies (those of its chunk, BucketChunks)
// reduce beside it: from when each is ready (BucketLeadSeconds), one after
// another on the communication stream, a bucket holds its compute share
// (GradientBucket::compute_share) for as long as it overlaps the pass, which
// computes for its compute's part of that time. `last`: the chunk's last
// pass of the step, which runs every bucket; the others run the
// every-micro-batch ones. Both engines lengthen the pass by it (not a
// unit's: its buckets are ready at its end).
double BucketContentionSeconds(const StageProgram& stage, int64_t chunks, bool last, int64_t final_chunk = 0);

// That rule for a pass of `duration` that computes for `compute` of it and
// the buckets it readies, in their order on the stream.
struct BucketBesidePass {
  double lead = 0;     // ready this long before the pass ends
  double seconds = 0;  // its collective's
  double compute_share = 0;
};
double ContentionOfBuckets(double duration, double compute, const std::vector<BucketBesidePass>& buckets);

// The compute of a micro-batch's final gradient pass (BucketLeadSeconds'):
// its steps' ComputeEndSeconds.
double FinalGradientComputeSeconds(const StageProgram& stage, int64_t chunks, int64_t final_chunk = 0);

// The items of a stage's order that are the last pass of their micro-batch
// and chunk to complete gradients (that chunk's final backward, which queues
// the chunk's gradient buckets, BucketChunks), the last of them on each
// chunk, and the step's last of all.
struct FinalGradientPasses {
  std::vector<bool> is_final;       // per item of the order
  std::vector<bool> is_chunk_last;  // per item: the last final item of its chunk
  size_t last = 0;                  // meaningless when none is final (inference)
  int64_t last_chunk = 0;           // the chunk that one runs
};
FinalGradientPasses FindFinalGradientPasses(const Plan& plan, const StageProgram& stage,
                                            const std::vector<ScheduleItem>& order);

}  // namespace shardlab
