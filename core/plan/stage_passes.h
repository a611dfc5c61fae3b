// A stage's passes as both engines walk them: each pass kind's steps per
// virtual pipeline chunk (ChunkSteps; the pass that completes the gradients
// with a step break wherever a gradient bucket becomes ready), and the units
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
// backward reaches (and its first sequence chunk, the last its backwards reach). For each of the stage's gradient
// buckets: how long before that pass ends its last gradient exists (the whole pass when it came with an earlier chunk
// or the input-gradient pass); `pass_seconds` gets the pass's closed-form duration. Both engines' and the fusion
// tuner's rule.
std::vector<double> BucketLeadSeconds(const StageProgram& stage, int64_t chunks, double* pass_seconds);

}  // namespace shardlab
