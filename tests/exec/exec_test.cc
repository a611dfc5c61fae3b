// The real back ends: Gloo collectives and splits compute the right values on
// 4 CPU ranks, the plan executor runs data-parallel and pipeline plans and
// reports their timeline, and NCCL says why it cannot run where there is no
// GPU, from a module that only GPU work loads.
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config/run_config.h"
#include "core/flow/prepared_run.h"
#include "exec/plan_executor.h"
#include "exec/rank_launcher.h"
#include "tests/test_util.h"

namespace shardlab::exec {
namespace {

using testing::SourcePath;

// Checks inside a rank; the first failure becomes the rank's output.
struct RankChecks {
  std::string failure;
  void Expect(bool ok, const std::string& what) {
    if (!ok && failure.empty()) failure = what;
  }
  std::string Result() const { return failure.empty() ? "ok" : failure; }
};

void RequireAllOk(const std::vector<std::string>& outputs) {
  for (size_t r = 0; r < outputs.size(); ++r) {
    INFO("rank " << r);
    CHECK(outputs[r] == "ok");
  }
}

#ifdef SHARDLAB_HAVE_GLOO
TEST_CASE("gloo collectives compute the right values on 4 ranks") {
  LaunchOptions launch;
  launch.ranks = 4;
  RequireAllOk(RunRanks(launch, [](RankContext& c) {
    RankChecks checks;
    const int n = c.size, r = c.rank;
    const size_t count = 1000;
    std::vector<float> a(count * n), b(count * n);
    std::iota(a.begin(), a.end(), static_cast<float>(r));
    c.world.AllReduce(a.data(), count);
    checks.Expect(a[7] == 4 * 7 + 6.0f, fmt::format("allreduce gave {}", a[7]));
    std::fill(a.begin(), a.end(), static_cast<float>(r));
    c.world.AllGather(a.data(), b.data(), count);
    for (int p = 0; p < n; ++p) checks.Expect(b[p * count + 3] == p, "allgather out of rank order");
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i / count);  // block p holds p
    c.world.ReduceScatter(a.data(), b.data(), count);
    checks.Expect(b[0] == 4.0f * r && b[count - 1] == 4.0f * r, fmt::format("reducescatter gave {}", b[0]));
    for (int p = 0; p < n; ++p) std::fill(a.begin() + p * count, a.begin() + (p + 1) * count, 10.0f * r + p);
    c.world.AllToAll(a.data(), b.data(), count);
    for (int p = 0; p < n; ++p) checks.Expect(b[p * count] == 10.0f * p + r, "alltoall block misplaced");
    a[0] = r == 2 ? 42.0f : 0.0f;
    c.world.Broadcast(a.data(), count, 2);
    checks.Expect(a[0] == 42.0f, "broadcast from rank 2");
    if (r % 2 == 0) {
      a[0] = 100.0f + r;
      c.world.Send(a.data(), count, r + 1, 7);
    } else {
      c.world.Recv(b.data(), count, r - 1, 7);
      checks.Expect(b[0] == 100.0f + r - 1, "send/recv payload");
    }
    // Split into even and odd ranks, keyed backwards.
    auto half = c.world.Split(r % 2, -r);
    checks.Expect(half && half->size() == 2, "split size");
    checks.Expect(half->rank() == (r < 2 ? 1 : 0), fmt::format("split rank {} for world rank {}", half->rank(), r));
    a[0] = static_cast<float>(r);
    half->AllReduce(a.data(), 1);
    checks.Expect(a[0] == (r % 2 == 0 ? 2.0f : 4.0f), "allreduce within the split");
    auto none = c.world.Split(r == 0 ? 0 : -1, 0);
    checks.Expect((r == 0) == (none != nullptr), "a negative color gives no communicator");
    c.world.Barrier();
    return checks.Result();
  }));
}

Plan PlanOf(const std::string& run_file) { return Prepare(LoadRunFile(SourcePath(run_file))).plan; }

std::vector<RankExecution> Execute(const Plan& plan) {
  LaunchOptions launch;
  launch.ranks = static_cast<int>(plan.devices);
  ExecutionOptions options;
  options.warmup_steps = 1;  // the first step pays for page faults and thread start-up
  options.steps = 1;
  std::vector<RankExecution> out;
  for (const std::string& s : RunRanks(launch, [&](RankContext& c) {
         return ToJson(ExecutePlan(plan, c.rank, c.world, c.runtime, options)).dump();
       }))
    out.push_back(RankExecutionFromJson(nlohmann::json::parse(s)));
  return out;
}

bool HasEvent(const StepResult& r, EventKind kind, int64_t stage) {
  for (const TraceEvent& e : r.events)
    if (e.kind == kind && e.stage == stage && e.duration >= 0) return true;
  return false;
}

TEST_CASE("the executor runs a data-parallel plan with its gradient buckets") {
  const Plan plan = PlanOf("configs/runs/tiny-gpt-cpu-dp4.json");
  const auto ranks = Execute(plan);
  REQUIRE(ranks.size() == 4);
  const StepResult measured = MeasuredStep(plan, ranks);
  CHECK(measured.step_seconds > 0);
  CHECK(measured.stages[0].forward_seconds > 0);
  CHECK(measured.stages[0].backward_seconds > measured.stages[0].forward_seconds);
  CHECK(HasEvent(measured, EventKind::kForward, 0));
  CHECK(HasEvent(measured, EventKind::kGradient, 0));
  CHECK(HasEvent(measured, EventKind::kOptimizer, 0));
  bool gemm = false, gradients = false;
  for (const TaskTypeTime& t : ranks[0].task_types) {
    gemm |= t.type == "gemm" && t.measured > 0 && t.predicted > 0;
    gradients |= t.type == "gradient allreduce" && t.count == static_cast<int64_t>(plan.stages[0].buckets.size());
  }
  CHECK(gemm);
  CHECK(gradients);
}

TEST_CASE("the executor runs level3's prefetched weight gathers beside the compute") {
  RunSpec run = LoadRunFile(SourcePath("configs/runs/tiny-gpt-cpu-dp4.json"));
  run.parallel.enable_parallel_optimizer = true;
  run.parallel.parallel_optimizer_config.optimizer_level = OptimizerLevel::kLevel3;
  const Plan plan = Prepare(run).plan;
  int64_t prefetches = 0;
  for (const auto* pass : {&plan.stages[0].forward, &plan.stages[0].backward})
    for (const Task& t : *pass) prefetches += t.prefetch;
  REQUIRE(prefetches > 0);
  const auto ranks = Execute(plan);
  REQUIRE(ranks.size() == 4);
  int64_t ran = -1;
  for (const TaskTypeTime& t : ranks[0].task_types)
    if (t.type == "prefetch allgather") ran = t.count;
  // Every prefetch of every micro-batch's passes, timed.
  CHECK(ran == prefetches * plan.micro_batches);
  CHECK(MeasuredStep(plan, ranks).step_seconds > 0);
}

TEST_CASE("the executor runs a pipeline of model-parallel stages") {
  const Plan plan = PlanOf("configs/runs/tiny-gpt-cpu-mp2-pp2.json");
  REQUIRE(plan.stages.size() == 2);
  const auto ranks = Execute(plan);
  const StepResult measured = MeasuredStep(plan, ranks);
  for (int64_t s = 0; s < 2; ++s) {
    INFO("stage " << s);
    CHECK(HasEvent(measured, EventKind::kForward, s));
    CHECK(HasEvent(measured, EventKind::kBackward, s));
    CHECK(measured.stages[s].end_seconds >= measured.stages[s].passes_end_seconds);
  }
  CHECK(HasEvent(measured, EventKind::kReceive, 1));
  CHECK(HasEvent(measured, EventKind::kSend, 0));
  int forwards = 0;
  for (const TraceEvent& e : measured.events) forwards += e.kind == EventKind::kForward && e.stage == 1;
  CHECK(forwards == plan.micro_batches);
  // Stage 1 waits for stage 0's first forward: its first pass starts after it.
  double first0 = 1e9, first1 = 1e9;
  for (const TraceEvent& e : measured.events)
    if (e.kind == EventKind::kForward)
      (e.stage == 0 ? first0 : first1) = std::min(e.stage == 0 ? first0 : first1, e.start);
  CHECK(first1 > first0);
}

TEST_CASE("the executor runs ZB-H1's weight-gradient passes and their gradient buckets") {
  RunSpec run = LoadRunFile(SourcePath("configs/runs/tiny-gpt-cpu-mp2-pp2.json"));
  run.simulation.pipeline_schedule = PipelineSchedule::kZeroBubbleH1;
  const Plan plan = Prepare(run).plan;
  REQUIRE(!plan.stages[1].weight_gradient.empty());
  const auto ranks = Execute(plan);
  const StepResult measured = MeasuredStep(plan, ranks);
  for (int64_t s = 0; s < 2; ++s) {
    INFO("stage " << s);
    int weight_gradients = 0;
    for (const TraceEvent& e : measured.events)
      weight_gradients += e.kind == EventKind::kWeightGradient && e.stage == s;
    CHECK(weight_gradients == plan.micro_batches);
    CHECK(HasEvent(measured, EventKind::kGradient, s));
  }
  // Stage 1 runs W0 after B1, its second backward.
  std::vector<std::string> order;
  for (const TraceEvent& e : ranks.back().events)
    if (e.IsPass()) order.push_back(e.name);
  REQUIRE(order.size() >= 5);
  CHECK(std::vector<std::string>(order.begin(), order.begin() + 5) ==
        std::vector<std::string>{"F0", "B0", "F1", "B1", "W0"});
}
#endif

TEST_CASE("the executor says which schedules it cannot run before any rank starts") {
  RunSpec run = LoadRunFile(SourcePath("configs/runs/tiny-gpt-cpu-mp2-pp2.json"));
  CHECK_NOTHROW(CheckExecutable(Prepare(run).plan));
  run.simulation.overlap_forward_backward = {CommDimension::kTensor};
  CHECK_THROWS_WITH(CheckExecutable(Prepare(run).plan), Catch::Contains("overlap_forward_backward"));
  run.simulation.overlap_forward_backward.clear();
  run.simulation.pipeline_schedule = PipelineSchedule::kInterleaved;
  run.simulation.virtual_pipeline_chunks = 2;
  CHECK_THROWS_WITH(CheckExecutable(Prepare(run).plan), Catch::Contains("not virtual pipeline chunks"));
}

TEST_CASE("nccl runs only where a GPU is and says why not elsewhere") {
  std::string why;
  if (!BackendAvailable("nccl", &why)) {
    CHECK(!why.empty());
    CHECK(why.find('\n') == std::string::npos);
    WARN("NCCL back end skipped: " << why);
    return;
  }
  LaunchOptions launch;
  launch.backend = "nccl";
  launch.ranks = 1;
  RequireAllOk(RunRanks(launch, [](RankContext& c) {
    c.runtime.Reserve(Stream::kCompute, 16);
    c.world.AllReduce(c.runtime.Input(Stream::kCompute), 16);
    c.runtime.Synchronize();
    return std::string("ok");
  }));
}

#ifdef SHARDLAB_HAVE_NCCL
// Whether this process has mapped a library whose file name contains `name`.
bool Maps(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find(name) != std::string::npos) return true;
  return false;
}

TEST_CASE("the GPU back end is a module that only GPU work loads") {
  // This program links shardlab_exec as the CLI does: no CUDA in it.
  CHECK_FALSE(Maps("libcudart"));
  CHECK_FALSE(Maps("libnccl"));
  std::string why;
  BackendAvailable("nccl", &why);
  INFO(why);
  // The probe's child loaded the module (a missing GPU is the only excuse)...
  CHECK(why.find("cannot load the GPU back end") == std::string::npos);
  // ...and this process still has none of it.
  CHECK_FALSE(Maps("libshardlab_gpu"));
  CHECK_FALSE(Maps("libcublas"));

  setenv("SHARDLAB_GPU_MODULE", "/nonexistent/libshardlab_gpu.so", 1);
  CHECK_FALSE(BackendAvailable("nccl", &why));
  unsetenv("SHARDLAB_GPU_MODULE");
  CHECK(why == "cannot load the GPU back end libshardlab_gpu.so: tried /nonexistent/libshardlab_gpu.so (absent)");
}
#endif

}  // namespace
}  // namespace shardlab::exec
