// The stack's rank order (stack.rank_order) through the whole flow: where a
// stage's devices sit among the global ranks (RankPlacement), the groups
// and pipeline transfers that follow from it, and the run file's checks.
#include <set>

#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/config/run_config.h"
#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

const char* kLlama70b = "configs/runs/llama2-70b-h100-1024.json";

// LLaMA-2 70B on 1024 H100 (PP 4, micro-batches of 128 samples) with
// `model_parallel`-way tensor parallelism in `order`.
RunSpec Llama70b(int64_t model_parallel, const char* order) {
  return LoadRunFile(testing::SourcePath(kLlama70b),
                     {"stack.preset=megatron", std::string("stack.rank_order=") + order, "parallel.micro_batch_num=8",
                      "model_params.model_parallel=" + std::to_string(model_parallel),
                      "model_params.data_parallel=" + std::to_string(256 / model_parallel)});
}

// The data-parallel group (of `size` devices) a stage reduces gradients over.
CommGroupSpec GradientGroup(const StageProgram& stage, int64_t size) {
  for (const GradientBucket& b : stage.buckets)
    if (stage.groups[b.group].size == size) return stage.groups[b.group];
  FAIL("no gradient bucket over " << size << " devices");
  return {};
}

}  // namespace

TEST_CASE("rank orders number a stage's devices as Megatron's rank generator does") {
  // tp-pp-dp with TP 2, PP 4, DP 2: rank = tp + 2 x (pp + 4 x dp).
  const RankPlacement tp_pp_dp{4, 4, 2};
  CHECK(tp_pp_dp.Rank(0, 0) == 0);
  CHECK(tp_pp_dp.Rank(0, 1) == 1);
  CHECK(tp_pp_dp.Rank(0, 2) == 8);
  CHECK(tp_pp_dp.Rank(0, 3) == 9);
  CHECK(tp_pp_dp.Rank(1, 0) == 2);
  CHECK(tp_pp_dp.Rank(3, 3) == 15);
  CHECK_FALSE(tp_pp_dp.contiguous());
  // tp-cp-ep-dp-pp: each stage a block of consecutive ranks.
  const RankPlacement outermost = RankPlacement::Contiguous(4, 4);
  CHECK(outermost.Rank(1, 0) == 4);
  CHECK(outermost.Rank(3, 3) == 15);
  CHECK(outermost.contiguous());
  // Both are bijections whose inverse is StageOf and LocalOf.
  for (const RankPlacement& p : {tp_pp_dp, outermost}) {
    std::set<int64_t> seen;
    for (int64_t s = 0; s < 4; ++s)
      for (int64_t l = 0; l < 4; ++l) {
        const int64_t r = p.Rank(s, l);
        seen.insert(r);
        CHECK(p.StageOf(r) == s);
        CHECK(p.LocalOf(r) == l);
      }
    CHECK(seen.size() == 16);
    CHECK(*seen.rbegin() == 15);
  }
}

TEST_CASE("tp-pp-dp keeps a replica's stages on one server and spreads each stage's data parallel group") {
  const PreparedRun stages_outside = Prepare(Llama70b(2, "tp-cp-ep-dp-pp"));
  const PreparedRun stages_inside = Prepare(Llama70b(2, "tp-pp-dp"));
  const Plan &outside = stages_outside.plan, &inside = stages_inside.plan;
  // Stage 1 starts at rank 256, or at rank 2 beside stage 0's first tensor-parallel pair.
  CHECK(outside.StageRanks(1).front() == 256);
  CHECK(inside.StageRanks(1).front() == 2);
  CHECK(inside.StageRanks(0)[2] == 8);  // the next replica's pair: TP x PP ranks on
  // Stage 0 hands its activations over NVLink instead of a 400 Gb/s NIC.
  CHECK(inside.stages[0].send_seconds < outside.stages[0].send_seconds / 5);
  // The gradients' 128-device group: 4 devices on each of 32 servers, or one on each of 128.
  const CommGroupSpec spread = GradientGroup(inside.stages[0], 128), packed = GradientGroup(outside.stages[0], 128);
  CHECK(packed.placement.servers == 32);
  CHECK(packed.placement.per_server == 4);
  CHECK(spread.placement.servers == 128);
  CHECK(spread.placement.per_server == 1);
  // Same work and memory either way; only the communication moves.
  CHECK(inside.model_flops == Approx(outside.model_flops));
  CHECK(inside.stages[0].memory.peak == Approx(outside.stages[0].memory.peak));
  const StepResult a = Summarize(inside, RunAnalytical(inside)), b = Summarize(outside, RunAnalytical(outside));
  CHECK(a.step_seconds > b.step_seconds);  // the data-parallel rings cost more than the transfers save
}

TEST_CASE("the rank order tp-pp-dp is refused where Megatron refuses it") {
  const std::string run = testing::SourcePath(kLlama70b);
  CHECK_THROWS_WITH(LoadRunFile(run, {"stack.preset=megatron", "stack.rank_order=tp-pp-dp",
                                      "model_params.context_parallel=2", "model_params.data_parallel=16"}),
                    Catch::Contains("/stack/rank_order") && Catch::Contains("context_parallel 2") &&
                        Catch::Contains("--use-tp-pp-dp-mapping"));
  CHECK_THROWS_WITH(
      LoadRunFile(run, {"stack.preset=megatron", "stack.rank_order=tp-pp-dp", "model_params.expert_parallel=2"}),
      Catch::Contains("expert_parallel 2"));
  CHECK_THROWS_WITH(LoadRunFile(run, {"stack.preset=mindspore", "stack.rank_order=tp-pp-dp"}),
                    Catch::Contains("/stack/rank_order") && Catch::Contains("set the stack's preset to megatron"));
  CHECK_THROWS_WITH(
      LoadRunFile(run, {"stack.preset=megatron", "stack.rank_order=pp-tp-dp"}),
      Catch::Contains("/stack/rank_order") && Catch::Contains(R"(expected one of "tp-cp-ep-dp-pp", "tp-pp-dp")"));
}

}  // namespace shardlab
