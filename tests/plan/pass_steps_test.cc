#include "core/plan/pass_steps.h"

#include <catch2/catch.hpp>

namespace shardlab {
namespace {

Task ComputeTask(const std::string& name, double seconds) {
  Task t;
  t.name = name;
  t.seconds = seconds;
  return t;
}

Task CollectiveTask(const std::string& name, double seconds) {
  Task t = ComputeTask(name, seconds);
  t.kind = Task::Kind::kCollective;
  return t;
}

TEST_CASE("a pass merges compute runs and blocks on its collectives") {
  const std::vector<Task> tasks = {ComputeTask("a", 1), ComputeTask("b", 2), CollectiveTask("x", 3),
                                   ComputeTask("c", 4)};
  const auto steps = PassSteps(tasks, 0, tasks.size());
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].compute_seconds == 3);
  CHECK(steps[0].end_task == 2);
  CHECK(steps[1].collectives == std::vector<int>{2});
  CHECK(steps[1].ClosedFormSeconds(tasks) == 3);
  CHECK(steps[2].first_task == 3);
  // Each compute task is done as the compute through it is.
  CHECK(steps[0].TaskDoneSeconds(tasks, 0) == Approx(1));
  CHECK(steps[0].TaskDoneSeconds(tasks, 1) == Approx(3));
}

TEST_CASE("a gradient completed inside a step is done as the compute through it is, before the step's collective") {
  // An overlapped collective holding half the compute for 3 s, then the
  // compute of a (1 s) and b (2 s) beside it on one step.
  Task x = CollectiveTask("x", 3);
  x.overlapped = true;
  x.compute_share = 0.5;
  const std::vector<Task> tasks = {x, ComputeTask("a", 1), ComputeTask("b", 2)};
  const auto steps = PassSteps(tasks, 0, tasks.size());
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].TaskDoneSeconds(tasks, 1) == Approx(2));    // 1 s of work at half rate
  CHECK(steps[0].TaskDoneSeconds(tasks, 2) == Approx(4.5));  // 1.5 s at half rate to 3 s, then 1.5 s alone
  CHECK(steps[0].ComputeEndSeconds(tasks) == Approx(4.5));
  CHECK(steps[0].TaskDoneSeconds(tasks, 0) == Approx(4.5));  // the collective: with the step
}

Task CopyTask(const std::string& name, double seconds) {
  Task t = ComputeTask(name, seconds);
  t.pcie_copy = true;
  t.overlapped = true;
  return t;
}

TEST_CASE("host copies run on the copy stream beside whatever follows, and a waiting step waits for them") {
  // Forward: layer 0 computes, its copy out runs beside layer 1's compute and a blocking collective.
  const std::vector<Task> forward = {ComputeTask("layer0", 2), CopyTask("layer0/out", 3), ComputeTask("layer1", 1),
                                     CollectiveTask("x", 1), ComputeTask("layer2", 2)};
  const auto steps = PassSteps(forward, 0, forward.size());
  REQUIRE(steps.size() == 4);
  CHECK(steps[1].copy_seconds == 3);
  CHECK(steps[1].compute_seconds == 1);  // layer 1 joins the step the copy starts
  CHECK(steps[1].first_task == 1);
  CHECK(steps[1].TaskDoneSeconds(forward, 2) == Approx(1));  // layer 1's compute, not the copy's time
  std::vector<double> ends;
  const double pass = ClosedFormPass(steps, forward, [&](const PassStep&, double end, double) { ends.push_back(end); });
  CHECK(ends == std::vector<double>{2, 3, 4, 6});  // the copy, done at 5, never holds the compute up
  CHECK(pass == 6);
  // A copy longer than all that follows holds the pass's end.
  std::vector<Task> slow = forward;
  slow[1].seconds = 7;
  CHECK(ClosedFormPass(PassSteps(slow, 0, slow.size()), slow, [](const PassStep&, double, double) {}) == 9);

  // Backward: layer 1's backward sends for layer 0's activations; layer 0's backward waits for them.
  std::vector<Task> backward = {CopyTask("layer0/in", 3), ComputeTask("layer1", 2), ComputeTask("layer0", 2)};
  backward[2].after_host_copies = true;
  const auto back = PassSteps(backward, 0, backward.size());
  REQUIRE(back.size() == 2);
  CHECK(back[1].waits_for_copies);
  CHECK(ClosedFormPass(back, backward, [](const PassStep&, double, double) {}) == 5);  // waits 1 for the copy
  // A copy issued by the waiting task itself is not waited for: the next layer's prefetch.
  backward[2] = CopyTask("layer_before/in", 3);
  backward[2].after_host_copies = true;
  backward.push_back(ComputeTask("layer0", 2));
  const auto chained = PassSteps(backward, 0, backward.size());
  REQUIRE(chained.size() == 2);
  CHECK(chained[1].waits_for_copies);
  CHECK(chained[1].copy_seconds == 3);
  CHECK(ClosedFormPass(chained, backward, [](const PassStep&, double, double) {}) == 3 + 3);  // compute to 5, copy to 6

  // A copy right after an overlapped collective joins its step: both wait for the compute after them.
  Task overlapped = CollectiveTask("y", 2);
  overlapped.overlapped = true;
  const std::vector<Task> joined = {overlapped, CopyTask("out", 1), ComputeTask("next", 2)};
  const auto one = PassSteps(joined, 0, joined.size());
  REQUIRE(one.size() == 1);
  CHECK(one[0].ClosedFormSeconds(joined) == 2);
}

TEST_CASE("MicroBatchInterleaved overlaps one slice's collective with the next slice's compute") {
  const std::vector<Task> tasks = {ComputeTask("c0", 4), CollectiveTask("x0", 2), ComputeTask("c1", 4),
                                   CollectiveTask("x1", 2)};
  std::vector<int> index_map;
  const auto halves = InterleavePass(
      tasks, 2,
      [](const Task& t) {
        Task half = t;
        half.seconds /= 2;
        return half;
      },
      &index_map);
  REQUIRE(halves.size() == 8);
  CHECK(halves[0].name == "c0[0]");
  CHECK(halves[1].name == "x0[0]");
  CHECK(halves[2].name == "c0[1]");
  CHECK(halves[1].overlapped);
  CHECK_FALSE(halves[0].overlapped);
  CHECK(index_map == std::vector<int>{2, 3, 6, 7});
  // Steps: c0[0] | x0[0] + c0[1] | x0[1] + c1[0] | x1[0] + c1[1] | x1[1].
  const auto steps = PassSteps(halves, 0, halves.size());
  REQUIRE(steps.size() == 5);
  CHECK(steps[1].collectives == std::vector<int>{1});
  CHECK(steps[1].compute_seconds == 2);
  double total = 0;
  for (const auto& s : steps) total += s.ClosedFormSeconds(halves);
  // 2 + max(1, 2) x 3 + 1 = 9, against 4 + 2 + 4 + 2 = 12 without interleaving.
  CHECK(total == 9);
}

Task PrefetchTask(const std::string& name, double seconds) {
  Task t = CollectiveTask(name, seconds);
  t.prefetch = true;
  return t;
}

TEST_CASE("a prefetched weight gather runs beside compute and blocking collectives until the step that needs it") {
  // Layer 1's gather goes out as layer 0 starts; layer 0 computes, blocks on
  // a tensor-parallel collective and computes again; layer 1 needs the gather.
  auto pass = [](double gather) {
    std::vector<Task> tasks = {PrefetchTask("layer1/gather", gather), ComputeTask("layer0/a", 1),
                               CollectiveTask("layer0/x", 1), ComputeTask("layer0/b", 1), ComputeTask("layer1/a", 1)};
    tasks[4].prefetches_needed = 1;
    return tasks;
  };
  const std::vector<Task> slow = pass(5);
  const auto steps = PassSteps(slow, 0, slow.size());
  REQUIRE(steps.size() == 4);
  CHECK(steps[0].prefetches == std::vector<int>{0});
  CHECK(steps[0].compute_seconds == 1);  // layer0/a joins the step that issues the gather
  CHECK(steps[3].prefetches_needed == 1);
  CHECK(steps[3].first_task == 4);
  std::vector<double> waits;
  double drained = -1;
  // The gather ends at 5: layer 1 waits 2 after layer 0's 3, then computes.
  CHECK(ClosedFormPass(
            steps, slow, [&](const PassStep&, double, double w) { waits.push_back(w); }, &drained) == 6);
  CHECK(waits == std::vector<double>{0, 0, 0, 2});
  CHECK(drained == 0);
  // A gather shorter than layer 0 costs nothing.
  const std::vector<Task> quick = pass(2.5);
  CHECK(ClosedFormPass(PassSteps(quick, 0, quick.size()), quick, [](const PassStep&, double, double) {}) == 4);
  // A range that starts after the gather (a later virtual pipeline chunk)
  // waits for nothing it did not issue.
  const auto later = PassSteps(slow, 1, slow.size());
  for (const PassStep& step : later) CHECK(step.prefetches_needed == 0);
  CHECK(ClosedFormPass(later, slow, [](const PassStep&, double, double) {}) == 4);
  // The operator waiting for the gather joins an overlapped collective's
  // step (a tensor-parallel gather hidden behind its compute), both after the wait.
  std::vector<Task> overlap = {PrefetchTask("layer1/gather", 0.5), ComputeTask("layer0/a", 1),
                               CollectiveTask("layer1/x", 1), ComputeTask("layer1/a", 1)};
  overlap[2].overlapped = true;
  overlap[3].prefetches_needed = 1;
  const auto joined = PassSteps(overlap, 0, overlap.size());
  REQUIRE(joined.size() == 2);
  CHECK(joined[1].collectives == std::vector<int>{2});
  CHECK(joined[1].compute_seconds == 1);
  CHECK(joined[1].prefetches_needed == 1);
  CHECK(ClosedFormPass(joined, overlap, [](const PassStep&, double, double) {}) == 2);
  // Prefetches queue one after another: a second one issued at 1 starts when the first ends.
  PrefetchStream stream;
  PassStep issue;
  issue.prefetches = {0, 0};
  stream.Issue(issue, slow, 1);
  PassStep second;
  second.prefetches_needed = 2;
  CHECK(stream.Wait(second, 1) == 10);
  CHECK(stream.Drain(3) == 8);
}

TEST_CASE("compute beside a collective runs at one minus the SMs its kernel holds, until the collective ends") {
  auto share = [](Task t, double s) {
    t.compute_share = s;
    return t;
  };
  // Compute 10 beside an overlapped collective of 4 holding a quarter of the
  // SMs: 3 of its work is done in those 4, the other 7 after: it ends at 11.
  std::vector<Task> tasks = {share(CollectiveTask("x", 4), 0.25), ComputeTask("a", 10)};
  tasks[0].overlapped = true;
  auto steps = PassSteps(tasks, 0, tasks.size());
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].ComputeEndSeconds(tasks) == Approx(11));
  CHECK(steps[0].ClosedFormSeconds(tasks) == Approx(11));
  // A collective that outlasts the compute: compute 2 at half speed ends at 4; the step at the collective's 10.
  tasks = {share(CollectiveTask("x", 10), 0.5), ComputeTask("a", 2)};
  tasks[0].overlapped = true;
  steps = PassSteps(tasks, 0, tasks.size());
  CHECK(steps[0].ComputeEndSeconds(tasks) == Approx(4));
  CHECK(steps[0].ClosedFormSeconds(tasks) == Approx(10));
  // Two collectives one after another, and a prefetch issued beside them on
  // its own stream: shares add while both streams run. Collectives 2 (0.25)
  // then 2 (0.5); prefetch 3 (0.25). Rates: 0.5 over [0,2), 0.25 over [2,3),
  // 0.5 over [3,4), 1 after: work 1 + 0.25 + 0.5 = 1.75 by 4, 8.25 after: ends at 12.25.
  tasks = {share(CollectiveTask("x", 2), 0.25), share(CollectiveTask("y", 2), 0.5), share(PrefetchTask("g", 3), 0.25),
           ComputeTask("a", 10)};
  tasks[0].overlapped = tasks[1].overlapped = true;
  steps = PassSteps(tasks, 0, tasks.size());
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].collectives == std::vector<int>{0, 1});
  CHECK(steps[0].prefetches == std::vector<int>{2});
  CHECK(steps[0].ComputeEndSeconds(tasks) == Approx(12.25));
  // Without a share (DMA-driven transfers: HCCL) the compute keeps its time.
  for (Task& t : tasks) t.compute_share = 0;
  CHECK(steps[0].ComputeEndSeconds(tasks) == Approx(10));
  // Shares adding up to every SM stall the compute until a stream ends; a
  // collective of no time holds nothing; a prefetch outlasting the compute
  // holds it to the end: 0.6 + 0.5 over [0, 2) stalls, then 0.5 over [2, 6)
  // does 2 of the 10, and 8 at full speed after the prefetch's 6: ends at 14.
  tasks = {share(CollectiveTask("x", 0), 0.9), share(CollectiveTask("y", 2), 0.6), share(PrefetchTask("g", 6), 0.5),
           ComputeTask("a", 10)};
  tasks[0].overlapped = tasks[1].overlapped = true;
  steps = PassSteps(tasks, 0, tasks.size());
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].ComputeEndSeconds(tasks) == Approx(14));
}

TEST_CASE("ChunkOfTask names the chunk whose forward share ChunkSteps gives each task") {
  for (int64_t n = 1; n <= 23; ++n)
    for (int64_t chunks = 1; chunks <= 5; ++chunks) {
      std::vector<Task> tasks;
      for (int64_t i = 0; i < n; ++i) tasks.push_back(ComputeTask("t" + std::to_string(i), 1));
      for (int64_t c = 0; c < chunks; ++c)
        for (const PassStep& step : ChunkSteps(tasks, chunks, c, false))
          for (int i = step.first_task; i < step.end_task; ++i) CHECK(ChunkOfTask(n, chunks, i) == c);
    }
}

}  // namespace
}  // namespace shardlab
