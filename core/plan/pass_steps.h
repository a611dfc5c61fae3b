// A pass (the forward or backward tasks of one micro-batch chunk) as the
// steps a device runs: a run of compute tasks merged into one, a blocking
// collective on its own, or an overlapped collective (MicroBatchInterleaved)
// together with the compute that follows it, the two on separate streams.
// Host copies of offloaded activations start a step and run on a third;
// prefetched weight gathers start a step and run on a fourth, until a later
// step waits for them. Both engines walk a pass by these steps, so they
// agree on what overlaps.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/plan/plan.h"

namespace shardlab {

struct PassStep {
  int first_task = 0;  // tasks [first_task, end_task) of the pass's task list
  int end_task = 0;
  double compute_seconds = 0;    // merged compute tasks
  std::vector<int> collectives;  // run one after another on the communication stream
  // Host copies issued as the step starts, on the copy engine: a third
  // stream, whose copies run one after another across the pass's steps
  // (activation offloading). The pass ends when its last copy has.
  double copy_seconds = 0;
  bool waits_for_copies = false;  // starts only once every copy issued before it has ended
  // Prefetched weight gathers issued as the step starts, on their own
  // stream, one after another across the pass's steps (Task::prefetch).
  std::vector<int> prefetches = {};
  int prefetches_needed = 0;  // starts once the first this many prefetches of its range have ended
  // Each compute task merged into compute_seconds, with the compute seconds through it.
  std::vector<std::pair<int, double>> compute_through = {};
  // Closed-form duration: both streams start together, the step ends when both are done.
  double ClosedFormSeconds(const std::vector<Task>& tasks) const;
  // When the step's compute ends, from its start: it runs at 1 minus the
  // compute share (Task::compute_share) of the collectives running beside
  // it, taken at their closed-form times from the step's start: its own
  // collectives one after another, and the prefetches it issues one after
  // another on their stream. Both engines time a step's compute by this.
  double ComputeEndSeconds(const std::vector<Task>& tasks) const { return ComputeDoneSeconds(tasks, compute_seconds); }
  // When `work` seconds of its compute are done, from the step's start, by that rule.
  double ComputeDoneSeconds(const std::vector<Task>& tasks, double work) const;
  // When task `task` of its range is done, from the step's start: a compute
  // task as the compute through it is (a gradient complete inside the step,
  // whose bucket may start before the step's collectives end), any other
  // with the step.
  double TaskDoneSeconds(const std::vector<Task>& tasks, int task) const;
  double CommunicationSeconds(const std::vector<Task>& tasks) const;  // the communication stream's
  double PrefetchSeconds(const std::vector<Task>& tasks) const;       // the prefetches it issues
};

// The copy engine's clock through a pass: `Start` gives how long a step
// waits before it starts at `now` (for the copies it waits for) and issues
// its copies; `Drain` how long the pass's end waits for the last copy.
struct CopyStream {
  double busy_until = 0;
  double Start(const PassStep& step, double now);
  double Drain(double now) const { return std::max(0.0, busy_until - now); }
};

// The steps of tasks [begin, end). A gradient that becomes ready inside a
// step does not end it (nor the compute beside the step's collectives): the
// engines time the moment by PassStep::TaskDoneSeconds, the real executor
// starts the bucket after the kernel.
std::vector<PassStep> PassSteps(const std::vector<Task>& tasks, size_t begin, size_t end);

// The tasks [first, second) of chunk `chunk` of a pass run as `chunks`
// virtual pipeline chunks: the chunk-th share of its tasks, or, `reversed`
// (a backward, which runs the layers last to first), the chunk-th share from
// the end; under dualpipe, chunk 1's are the mirrored copy's tasks
// (Task::mirror_copy), chunk 0's the others.
std::pair<size_t, size_t> ChunkTaskRange(const std::vector<Task>& tasks, int64_t chunks, int64_t chunk, bool reversed);
// The steps of that chunk's tasks.
std::vector<PassStep> ChunkSteps(const std::vector<Task>& tasks, int64_t chunks, int64_t chunk, bool reversed);
// The chunk whose share (as ChunkSteps splits a forward) holds task `task` of `tasks`.
int64_t ChunkOfTask(int64_t tasks, int64_t chunks, int64_t task);
// Per task of `tasks`: the chunk whose share (ChunkTaskRange, `reversed` for
// a backward) holds it; 0 where none does.
std::vector<int64_t> ChunkOfEachTask(const std::vector<Task>& tasks, int64_t chunks, bool reversed);

// The prefetch stream's clock through a pass: `Issue` queues a step's
// prefetches at `now`; `Wait` gives how long the step then waits for the
// prefetches it needs; `Drain` how long the pass's end waits for the last.
struct PrefetchStream {
  std::vector<double> ends;  // of each prefetch issued, in order
  void Issue(const PassStep& step, const std::vector<Task>& tasks, double now);
  double Wait(const PassStep& step, double now) const;
  double Drain(double now) const { return ends.empty() ? 0.0 : std::max(0.0, ends.back() - now); }
};

// A pass in closed form from time 0, the copy and prefetch streams' waits
// included: calls `each(step, end, waited)` with each step's end time and
// how long it waited for prefetches, and returns the pass's duration (its
// last copy's and prefetch's ends included; `drained`, when given, gets
// how long the end waited for the prefetches).
template <typename Each>
double ClosedFormPass(const std::vector<PassStep>& steps, const std::vector<Task>& tasks, Each each,
                      double* drained = nullptr) {
  CopyStream copies;
  PrefetchStream prefetches;
  double t = 0;
  for (const PassStep& step : steps) {
    prefetches.Issue(step, tasks, t);
    const double waited = prefetches.Wait(step, t);
    t += waited;
    t += copies.Start(step, t);
    t += step.ClosedFormSeconds(tasks);
    each(step, t, waited);
  }
  const double drain = std::max(copies.Drain(t), prefetches.Drain(t));
  if (drained) *drained = prefetches.Drain(t);
  return t + drain;
}

// Per task of a stage's GradientTasks() (its backward, or its
// weight-gradient pass when the backward is split): whether a gradient
// bucket is ready after it.
std::vector<bool> BucketReadyTasks(const StageProgram& stage);

// Splits a pass into `slices` interleaved copies of 1/slices of the batch
// each (MindSpore's MicroBatchInterleaved): segment i of slice j (its compute
// and the collectives after it) is followed by segment i of slice j+1, and
// each copied collective is overlapped with the compute after it. `scale`
// rebuilds a task for a slice (work and bytes divided, seconds recomputed).
// `index_map[t]` is the position of the last copy of task t.
template <typename Scale>
std::vector<Task> InterleavePass(const std::vector<Task>& tasks, int slices, Scale scale, std::vector<int>* index_map);

}  // namespace shardlab

#include "core/plan/pass_steps_inl.h"
