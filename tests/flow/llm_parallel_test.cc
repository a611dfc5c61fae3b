// The LLaMA building blocks and sequence parallelism through the whole flow
// (run -> strategies -> plan -> analytical step) on the shipped LLaMA-2 70B
// run: each toggle moves communication, memory and the step the way its
// formula says.
#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/report/graph_summary.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Llama70b() { return LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json")); }

int CountTasks(const std::vector<Task>& tasks, Collective type, const std::string& suffix) {
  int n = 0;
  for (const Task& t : tasks)
    if (t.kind == Task::Kind::kCollective && t.collective == type && t.name.size() >= suffix.size() &&
        t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      ++n;
  return n;
}

TEST_CASE("sequence parallel turns each tensor-parallel AllReduce into an AllGather and a ReduceScatter") {
  RunSpec sp = Llama70b();
  REQUIRE(sp.model.params.Bool("use_seq_parallel"));
  RunSpec plain = sp;
  plain.model.params.Set("use_seq_parallel", false);
  const PreparedRun with = Prepare(sp), without = Prepare(plain);
  const StageProgram &a = with.plan.stages[1], &b = without.plan.stages[1];
  const int layers = 20;  // 80 layers over 4 stages
  // Forward: two AllReduces per layer become two ReduceScatters and two AllGathers.
  CHECK(CountTasks(b.forward, Collective::kAllReduce, "") == 2 * layers);
  CHECK(CountTasks(a.forward, Collective::kAllReduce, "") == 0);
  CHECK(CountTasks(a.forward, Collective::kReduceScatter, "") == 2 * layers);
  CHECK(CountTasks(a.forward, Collective::kAllGather, "") == 2 * layers);
  // Backward: the column-parallel input gradients are reduce-scattered, never also AllReduced.
  CHECK(CountTasks(a.backward, Collective::kAllReduce, "/grad.AllReduce") == 0);
  CHECK(CountTasks(b.backward, Collective::kAllReduce, "/grad.AllReduce") == 2 * layers);
  // Full recompute keeps each layer's input, now split over the 8 tensor-parallel devices too.
  CHECK(a.memory.activations_per_micro_batch == Approx(b.memory.activations_per_micro_batch / 8).epsilon(0.01));
  // The norms and residuals no longer run 8 times over: less compute, a shorter step.
  const StepResult fast = Summarize(with.plan, RunAnalytical(with.plan));
  const StepResult slow = Summarize(without.plan, RunAnalytical(without.plan));
  CHECK(fast.step_seconds < slow.step_seconds);
  CHECK(fast.compute_seconds < slow.compute_seconds);
}

TEST_CASE("grouped-query attention shrinks the key and value projections by heads over kv_heads") {
  RunSpec gqa = Llama70b();
  REQUIRE(gqa.model.params.Int("kv_heads") == 8);
  RunSpec mha = gqa;
  mha.model.params.Set("kv_heads", int64_t{64});
  const PreparedRun g = Prepare(gqa), m = Prepare(mha);
  const double head_dim = 128, hidden = 8192, layers = 80;
  const double removed = 2 * (64 - 8) * head_dim * hidden * layers;  // key and value rows no longer there
  CHECK(SummarizeGraph(m.graph, 1).parameters - SummarizeGraph(g.graph, 1).parameters == removed);
  CHECK(g.plan.stages[1].memory.parameters < m.plan.stages[1].memory.parameters);
}

TEST_CASE("grouped-query heads must divide model_parallel and need fused attention") {
  RunSpec run = Llama70b();
  run.model.params.Set("attention", std::string("eager"));
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("needs attention \"flash\""));
  run = Llama70b();
  run.model.params.Set("kv_heads", int64_t{4});
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("kv_heads 4 cannot be split over model_parallel 8"));
}

}  // namespace
}  // namespace shardlab
