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
  // A bucket that becomes ready after task a splits the first run there.
  const auto broken = PassSteps(tasks, 0, tasks.size(), {true, false, false, false});
  REQUIRE(broken.size() == 4);
  CHECK(broken[0].end_task == 1);
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

}  // namespace
}  // namespace shardlab
