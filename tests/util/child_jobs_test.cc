#include "core/util/child_jobs.h"

#include <stdexcept>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "core/util/progress_report.h"

namespace shardlab {
namespace {

TEST_CASE("child jobs return their results in order, errors as failures") {
  std::vector<size_t> done;
  ChildJobOptions options;
  options.parallel = 3;
  options.on_done = [&](size_t k, const ChildJobResult&) { done.push_back(k); };
  const auto results = RunInChildProcesses(
      {0, 1, 2, 3, 4},
      [](size_t i) -> std::string {
        if (i == 3) throw std::runtime_error("job 3 failed");
        return std::string(100000 * (i + 1), static_cast<char>('a' + i));  // larger than a pipe buffer
      },
      options);
  REQUIRE(results.size() == 5);
  CHECK(done.size() == 5);
  for (size_t i : {0, 1, 2, 4}) {
    CHECK(results[i].status == ChildJobResult::Status::kOk);
    CHECK(results[i].output == std::string(100000 * (i + 1), static_cast<char>('a' + i)));
  }
  CHECK(results[3].status == ChildJobResult::Status::kFailed);
  CHECK(results[3].output == "job 3 failed");
}

TEST_CASE("the first child's progress reaches the parent's listener and the others' is dropped") {
  std::vector<double> reports;
  ScopedProgressListener listener([&](double f) { reports.push_back(f); });
  ChildJobOptions options;
  options.parallel = 3;
  options.forward_progress = true;
  const auto results = RunInChildProcesses(
      {7, 8, 9},
      [](size_t i) {
        // Job 7 reports 0, 0.25, ..., 1 and the others 0.9 (which must not arrive).
        for (int k = 0; k <= 4; ++k) {
          ReportProgress(i == 7 ? k : 3.6, 4);
          usleep(2000);
        }
        return std::string(70000, 'P');  // a result that starts like a progress record
      },
      options);
  for (const auto& r : results) {
    REQUIRE(r.status == ChildJobResult::Status::kOk);
    CHECK(r.output == std::string(70000, 'P'));
  }
  CHECK(reports == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  // Without forwarding, no child reports anything here (nor draws the parent's line).
  reports.clear();
  options.forward_progress = false;
  RunInChildProcesses(
      {7},
      [](size_t) {
        ReportProgress(1, 2);
        return std::string("done");
      },
      options);
  CHECK(reports.empty());
}

TEST_CASE("stopping kills running children and leaves the rest not run") {
  ChildJobOptions options;
  options.parallel = 2;
  int finished = 0;
  options.on_done = [&](size_t, const ChildJobResult&) { ++finished; };
  options.stop = [&] { return finished >= 1; };
  const auto results = RunInChildProcesses(
      {0, 1, 2, 3},
      [](size_t i) -> std::string {
        if (i > 0) sleep(30);
        return "quick";
      },
      options);
  CHECK(results[0].status == ChildJobResult::Status::kOk);
  for (size_t i = 1; i < 4; ++i) CHECK(results[i].status == ChildJobResult::Status::kNotRun);
}

TEST_CASE("a launch budget lets running children finish but starts no more") {
  ChildJobOptions options;
  options.parallel = 1;
  int launched = 0;
  options.may_launch = [&] { return launched++ < 2; };
  const auto results = RunInChildProcesses(
      {0, 1, 2}, [](size_t i) { return std::to_string(i); }, options);
  CHECK(results[0].status == ChildJobResult::Status::kOk);
  CHECK(results[2].status == ChildJobResult::Status::kNotRun);
}

}  // namespace
}  // namespace shardlab
