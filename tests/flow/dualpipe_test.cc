// The dualpipe schedule through the whole flow (run -> strategies -> plan ->
// analytical step; SimGrid's in tests/sim) on the shipped LLaMA-2 70B run: two model copies per stage,
// half the micro-batches each way, each stage's gradients summed with its
// mirror stage's.
#include <algorithm>

#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/config/run_config.h"
#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Llama70b() { return LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json")); }

RunSpec DualPipe(RunSpec run) {
  run.simulation.pipeline_schedule = PipelineSchedule::kDualPipe;
  run.simulation.virtual_pipeline_chunks = 2;
  return run;
}

TEST_CASE("dualpipe holds stage s and the mirror of stage S - 1 - s on each stage") {
  const PreparedRun one = Prepare(Llama70b());
  const PreparedRun dual = Prepare(DualPipe(Llama70b()));
  REQUIRE(dual.plan.stages.size() == 4);
  // Parameters, gradients and optimizer states of both copies.
  for (int64_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    const MemoryBreakdown& m = dual.plan.stages[s].memory;
    const MemoryBreakdown &a = one.plan.stages[s].memory, &b = one.plan.stages[3 - s].memory;
    CHECK(m.parameters == Approx(a.parameters + b.parameters));
    CHECK(m.gradients == Approx(a.gradients + b.gradients));
    CHECK(m.optimizer_states == Approx(a.optimizer_states + b.optimizer_states));
  }
  // Each micro-batch runs one copy: the model's FLOPs per step are 1F1B's.
  CHECK(dual.plan.model_flops == Approx(one.plan.model_flops));
  // Chunk 0 is stage s's own tasks, chunk 1 the mirrored copy's: stage 0's
  // forward ends with the head's loss, run for the second direction.
  const StageProgram& first = dual.plan.stages[0];
  CHECK_FALSE(first.forward.front().mirror_copy);
  CHECK(first.forward.back().mirror_copy);
  CHECK(first.forward.back().name.find("mirror.") == 0);
  CHECK(first.forward.back().name.find("loss") != std::string::npos);
  CHECK(first.backward.front().mirror_copy);
  size_t own = 0;
  for (const Task& t : first.forward) own += !t.mirror_copy;
  size_t one_first = one.plan.stages[0].forward.size(), one_last = one.plan.stages[3].forward.size();
  CHECK(own == one_first);
  CHECK(first.forward.size() == one_first + one_last);
  // The gradients it updates go to stage 3 while stage 3's come back: the
  // distributed optimizer's shard of both copies, 4 bytes an element in
  // fp32 (gradient_fp32_sync), where Adam keeps its two fp32 moments (and
  // an fp32 master copy where the stack keeps one).
  REQUIRE(dual.run.parallel.gradient_fp32_sync);
  const double state_bytes = dual.run.stack.master_weights ? 12.0 : 8.0;
  CHECK(first.mirror_gradient_bytes == Approx(first.memory.optimizer_states / state_bytes * 4));
  CHECK(first.mirror_gradient_seconds > 0);
  // 1F1B exchanges nothing of the kind.
  CHECK(one.plan.stages[0].mirror_gradient_bytes == 0);
  // Each copy's gradients fuse apart: the copy's parameters are the tensors past the original's.
  const auto original_tensors = static_cast<int>(dual.sharded.graph.tensors().size());
  for (const StageProgram& stage : dual.plan.stages)
    for (const GradientBucket& bucket : stage.buckets) {
      const auto copies = std::count_if(bucket.parameters.begin(), bucket.parameters.end(),
                                        [&](int t) { return t >= original_tensors; });
      CHECK((copies == 0 || copies == static_cast<std::ptrdiff_t>(bucket.parameters.size())));
    }
  // The plan names the model's operators: a copy's task maps back to its original.
  CHECK(dual.plan.model_operators == static_cast<int>(dual.sharded.graph.operators().size()));
  const Task& head = first.forward.back();
  CHECK(head.name.rfind("mirror." + dual.sharded.graph.op(dual.plan.ModelOperator(head)).name + "/", 0) == 0);
}

TEST_CASE("dualpipe fills 1F1B's bubble from both ends and both engines agree on it") {
  const PreparedRun one = Prepare(Llama70b());
  const PreparedRun dual = Prepare(DualPipe(Llama70b()));
  const StepResult a = Summarize(one.plan, RunAnalytical(one.plan));
  const StepResult d = Summarize(dual.plan, RunAnalytical(dual.plan));
  // 1F1B's stage 0 idles (S - 1)(F + B); DualPipe's far less, each stage as its mirror.
  CHECK(d.stages[0].bubble_seconds < 0.25 * a.stages[0].bubble_seconds);
  CHECK(d.stages[0].bubble_seconds == Approx(d.stages[3].bubble_seconds));
  CHECK(d.stages[1].end_seconds == Approx(d.stages[2].end_seconds));
  CHECK(d.step_seconds < a.step_seconds);
  // The gradient exchange with the mirror stage runs after the buckets, before the update.
  int exchanges = 0;
  for (const TraceEvent& e : d.events)
    if (e.stage == 0 && e.kind == EventKind::kGradient && e.name == "gradients with stage 3") {
      ++exchanges;
      // Its own transfer, after stage 3's buckets end if they end later.
      CHECK(e.duration >= dual.plan.stages[0].mirror_gradient_seconds * 0.999);
    }
  CHECK(exchanges == 1);
  // Data-parallel bytes: both copies' buckets and the exchange; tensor-parallel bytes as 1F1B's (each
  // micro-batch runs one copy).
  auto bytes = [](const StepResult& r, int64_t s, CommDimension dim) {
    for (const DimensionCommunication& c : r.stages[static_cast<size_t>(s)].communication)
      if (c.dimension == dim) return c.bytes;
    return 0.0;
  };
  CHECK(bytes(d, 1, CommDimension::kTensor) == Approx(bytes(a, 1, CommDimension::kTensor)).epsilon(0.01));
  CHECK(bytes(d, 1, CommDimension::kData) ==
        Approx(bytes(a, 1, CommDimension::kData) + bytes(a, 2, CommDimension::kData) +
               dual.plan.stages[1].mirror_gradient_bytes));
}

TEST_CASE("dualpipe refuses gradients reduce-scattered after every micro-batch and interleaved micro-batch slices") {
  RunSpec run = DualPipe(Llama70b());
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = true;
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("gradient_accumulation_shard"));
  RunSpec sliced = DualPipe(Llama70b());
  sliced.parallel.micro_batch_interleaved = 2;
  CHECK_THROWS_WITH(Prepare(sliced), Catch::Contains("not built with micro_batch_interleaved"));
}

TEST_CASE("dualpipe's pipeline bytes: both directions' transfers on a middle stage, one direction's at either end") {
  const PreparedRun dual = Prepare(DualPipe(Llama70b()));
  const StepResult d = Summarize(dual.plan, RunAnalytical(dual.plan));
  auto pipeline = [&](int64_t s) {
    for (const DimensionCommunication& c : d.stages[static_cast<size_t>(s)].communication)
      if (c.dimension == CommDimension::kPipeline) return c.bytes;
    return 0.0;
  };
  // Each micro-batch sends one activation forward and one gradient back over each boundary it crosses.
  const double boundary = dual.plan.stages[1].send_forward_bytes;
  CHECK(pipeline(1) == Approx(2.0 * 32 * boundary));
  CHECK(pipeline(0) == Approx(32 * boundary));
  CHECK(pipeline(3) == Approx(32 * boundary));
}

}  // namespace
}  // namespace shardlab
