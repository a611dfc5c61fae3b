#include "core/search/fusion_model.h"

#include <random>

#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/report/step_result.h"
#include "core/flow/prepared_run.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

// The analytical engine's step, summarised.
StepResult Analytical(const Plan& plan) { return Summarize(plan, RunAnalytical(plan)); }


using Ranges = std::vector<std::pair<size_t, size_t>>;

RunSpec Shipped(const std::string& name) { return LoadRunFile(testing::SourcePath("configs/runs/" + name + ".json")); }

double AnalyticalStep(const RunSpec& run) { return Analytical(Prepare(run).plan).step_seconds; }

FusionProblem ProblemOf(const RunSpec& run) { return BuildFusionProblem(run, Prepare(run).sharded); }

TEST_CASE("the fast fusion model reproduces the analytical engine's step for the run's own setting") {
  for (const std::string name : {"bert-large-a100-8", "resnet50-ascend-8", "pangu-alpha-13b-ascend-512"}) {
    INFO(name);
    RunSpec run = Shipped(name);
    if (name == "pangu-alpha-13b-ascend-512") run.model.params.Set("layers", int64_t{4});
    const FusionProblem problem = ProblemOf(run);
    CHECK(Estimate(problem, Collective::kAllReduce, run.parallel.comm_fusion.allreduce).step_seconds ==
          Approx(AnalyticalStep(run)).epsilon(1e-9));
    // And for another split, set in the run.
    run.parallel.comm_fusion.allreduce.mode = FusionSetting::Mode::kSize;
    run.parallel.comm_fusion.allreduce.size_mb = 16;
    CHECK(Estimate(problem, Collective::kAllReduce, run.parallel.comm_fusion.allreduce).step_seconds ==
          Approx(AnalyticalStep(run)).epsilon(1e-9));
  }
}

TEST_CASE("under several chunks per stage the fast fusion model reduces each chunk's buckets after its own pass") {
  // Interleaved 1F1B (LLaMA-2 70B, 2 chunks per stage) and zero_bubble_v
  // (DeepSeek-V3): each chunk's buckets are ready with that chunk's last
  // pass, long before the step's last pass, and lengthen that pass.
  for (const std::string name : {"llama2-70b-h100-1024-interleaved", "deepseek-v3-h800-2048"}) {
    INFO(name);
    RunSpec run = Shipped(name);
    const FusionProblem problem = ProblemOf(run);
    REQUIRE(problem.stages.front().passes.size() == 2);
    CHECK(problem.stages.front().passes[0].end < problem.stages.front().passes[1].end);
    FusionSetting& setting = run.parallel.comm_fusion.reducescatter;
    setting.mode = FusionSetting::Mode::kSize;
    setting.size_mb = 64;
    CHECK(Estimate(problem, Collective::kReduceScatter, setting).step_seconds ==
          Approx(AnalyticalStep(run)).epsilon(1e-4));
  }
  SECTION("every micro-batch's buckets, and Megatron's buckets per model chunk") {
    RunSpec run = Shipped("llama2-70b-h100-1024-interleaved");
    run.parallel.parallel_optimizer_config.gradient_accumulation_shard = true;
    FusionSetting& setting = run.parallel.comm_fusion.reducescatter;
    setting.mode = FusionSetting::Mode::kSize;
    setting.size_mb = 64;
    CHECK(Estimate(ProblemOf(run), Collective::kReduceScatter, setting).step_seconds ==
          Approx(AnalyticalStep(run)).epsilon(1e-4));
    RunSpec megatron = Shipped("llama2-70b-h100-1024-interleaved");
    megatron.stack.overlap_grad_reduce = true;
    CHECK(Estimate(ProblemOf(megatron), Collective::kReduceScatter, megatron.parallel.comm_fusion.reducescatter)
              .step_seconds == Approx(AnalyticalStep(megatron)).epsilon(1e-4));
  }
}

// A list of n gradients becoming ready one after another, in forward order
// (the last is ready first), on a stream of latency 1 ms and 10 GB/s.
FusionList RandomList(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> bytes(1e5, 5e7), gap(1e-4, 5e-3);
  FusionList list;
  double t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += gap(rng);
    list.gradients.push_back({static_cast<int>(i), "g" + std::to_string(i), bytes(rng), t});
  }
  std::reverse(list.gradients.begin(), list.gradients.end());
  list.seconds = [](double b) { return 1e-3 + b / 10e9; };
  return list;
}

TEST_CASE("dynamic programming over split points finds the brute-force optimum (up to 16 gradients)") {
  std::mt19937 rng(7);
  for (size_t n : {1, 2, 5, 9, 12, 16}) {
    const FusionList list = RandomList(n, rng);
    // Brute force: every subset of the n-1 split points, gradient 0 never alone.
    double brute = 1e300;
    for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {
      if (n > 1 && (mask & 1u)) continue;  // a split after gradient 0 leaves it alone
      Ranges ranges;
      size_t begin = 0;
      for (size_t i = 0; i + 1 < n; ++i)
        if (mask & (1u << i)) {
          ranges.emplace_back(begin, i + 1);
          begin = i + 1;
        }
      ranges.emplace_back(begin, n);
      brute = std::min(brute, FinishTime(list, ranges));
    }
    const auto splits = OptimalSplits(list, n, false);
    double dp = 1e300;
    for (const Ranges& ranges : splits)
      if (!ranges.empty()) dp = std::min(dp, FinishTime(list, ranges));
    INFO("n = " << n);
    CHECK(dp == Approx(brute).epsilon(1e-12));
    for (const Ranges& ranges : splits)
      for (const auto& r : ranges) CHECK_FALSE((r.first == 0 && r.second == 1 && n > 1));
  }
}

TEST_CASE("split indices are the inclusive ends of every bucket but the last") {
  CHECK(SplitIndices({{0, 4}, {4, 8}, {8, 10}}) == std::vector<int64_t>{3, 7});
  CHECK(SplitIndices({{0, 10}}).empty());
}

TEST_CASE("splitting a data-parallel ResNet-50 gradient list beats one bucket in the fast model") {
  const RunSpec run = Shipped("resnet50-ascend-4096");
  const FusionProblem problem = ProblemOf(run);
  const auto [stage, index] = MainList(problem, Collective::kAllReduce);
  REQUIRE(stage == 0);
  const FusionList& list = problem.stages[0].lists[index];
  CHECK(list.gradients.size() == 161);  // ResNet-50's trainable parameters
  const auto splits = OptimalSplits(list, 16, false);
  const double one = FinishTime(list, splits[0]);
  double best = one;
  for (const auto& ranges : splits)
    if (!ranges.empty()) best = std::min(best, FinishTime(list, ranges));
  CHECK(best < one);
  // The best split, written as MindSpore's split indices, gives the same step in the full model.
  size_t best_k = 0;
  for (size_t k = 0; k < splits.size(); ++k)
    if (!splits[k].empty() && FinishTime(list, splits[k]) == best) best_k = k;
  FusionSetting indices;
  indices.mode = FusionSetting::Mode::kIndex;
  indices.indices = SplitIndices(splits[best_k]);
  const FusionEstimate estimate = Estimate(problem, Collective::kAllReduce, indices);
  CHECK(estimate.collectives == best_k + 1);
  CHECK(estimate.step_seconds < Estimate(problem, Collective::kAllReduce, FusionSetting{}).step_seconds);
}

}  // namespace
}  // namespace shardlab
