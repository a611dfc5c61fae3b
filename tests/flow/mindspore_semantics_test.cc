// MindSpore's documented behaviour, checked through the whole flow (run ->
// strategies -> plan -> analytical step) on the shipped runs.
#include <algorithm>

#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/report/run_summary.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Shipped(const std::string& name) { return LoadRunFile(testing::SourcePath("configs/runs/" + name + ".json")); }

int OpIndex(const Graph& graph, const std::string& name) {
  for (size_t i = 0; i < graph.operators().size(); ++i)
    if (graph.op(static_cast<int>(i)).name == name) return static_cast<int>(i);
  FAIL("no operator " << name);
  return -1;
}

bool HasTaskNamed(const Plan& plan, const std::string& prefix) {
  for (const StageProgram& stage : plan.stages)
    for (const auto* tasks : {&stage.forward, &stage.backward})
      for (const Task& t : *tasks)
        if (t.name.rfind(prefix, 0) == 0 && t.kind == Task::Kind::kCollective) return true;
  return false;
}

TEST_CASE("BERT in data parallel gathers its masked-LM positions from the device's own batch, with no collective") {
  RunSpec run = Shipped("bert-large-a100-8");
  run.model.params.Set("layers", int64_t{2});
  double forward_at_8 = 0;
  for (const int64_t devices : {int64_t{8}, int64_t{64}}) {
    INFO(devices << " devices");
    RunSpec r = run;
    r.cluster.servers = devices / r.cluster.devices_per_server;
    r.parallel.device_num = devices;
    r.parallel.global_batch_size = 32 * devices;  // 32 sequences per device, as shipped
    r.model.params.Set("batch", r.parallel.micro_batch_size());
    const PreparedRun p = Prepare(r);
    const OpLayout& gather = p.sharded.layouts[OpIndex(p.graph, "mlm/gather")];
    CHECK(gather.forward_comm.empty());
    CHECK(gather.inputs[0].tensor_map()[0] == gather.inputs[1].tensor_map()[0]);  // rows split as the indices
    CHECK_FALSE(HasTaskNamed(p.plan, "mlm/gather"));
    for (const StageProgram& stage : p.plan.stages)
      for (const Task& t : stage.forward) CHECK(t.kind == Task::Kind::kCompute);  // nothing meets in the forward
    const StepResult step = Summarize(p.plan, RunAnalytical(p.plan));
    // Each device runs the network on its own 32 sequences: the forward pass does not grow with the cluster.
    if (devices == 8) forward_at_8 = step.stages[0].forward_seconds;
    else CHECK(step.stages[0].forward_seconds == Approx(forward_at_8).epsilon(1e-9));
  }
}

TEST_CASE("vocab_emb_dp false with one pipeline stage shares the row-split table between embedding and head") {
  RunSpec run = Shipped("tiny-gpt-cpu-mp2-pp2");
  run.parallel.pipeline_stages = 1;
  run.parallel.micro_batch_num = 1;
  run.model.params.Set("vocab_emb_dp", false);
  run.model.params.Set("data_parallel", int64_t{2});
  const PreparedRun p = Prepare(run);  // used to fail: "shared parameter ... different layouts"
  const OpLayout& embedding = p.sharded.layouts[OpIndex(p.graph, "embedding/word")];
  const OpLayout& head = p.sharded.layouts[OpIndex(p.graph, "head/logits")];
  CHECK(embedding.inputs[0].Normalized() == head.inputs[1].Normalized());
  CHECK(embedding.inputs[0].SliceShape()[0] * 2 == embedding.inputs[0].tensor_shape()[0]);
  // The lookup's AllReduce runs over the model-parallel pair of consecutive ranks.
  REQUIRE(embedding.forward_comm.size() == 1);
  CHECK(embedding.GroupOf(embedding.forward_comm[0], 2) == std::vector<int64_t>{2, 3});
}

TEST_CASE("step_flops counts recomputation for the recomputed layers only, not a whole forward pass") {
  RunSpec run = Shipped("tiny-gpt-cpu-pp2");
  const RunSummary plain = SummarizeRun(run, BuildRunGraph(run));
  run.parallel.recompute = true;
  const RunSummary recomputed = SummarizeRun(run, BuildRunGraph(run));
  const double micro_batches = static_cast<double>(run.parallel.micro_batch_num);
  const double extra = recomputed.step_flops - plain.step_flops;
  CHECK(extra > 0);
  CHECK(extra == Approx(recomputed.model.recompute_flops * micro_batches).epsilon(1e-12));
  // The embedding, the final norm and the head are not recomputed.
  CHECK(extra < 0.99 * plain.model.forward_flops * micro_batches);
}

TEST_CASE("host-device training keeps host-placed parameters and their optimizer states out of device memory") {
  const RunSpec run = Shipped("wide-deep-host-ascend-8");
  const PreparedRun p = Prepare(run);
  double host_tables = 0, all = 0;
  for (int t : p.graph.Parameters()) {
    const double bytes = static_cast<double>(p.graph.tensor(t).bytes());
    all += bytes;
    bool device_use = false;
    for (const Operator& op : p.graph.operators())
      if (std::find(op.inputs.begin(), op.inputs.end(), t) != op.inputs.end())
        device_use = device_use || op.StringAttr("primitive_target", "") != "CPU";
    if (!device_use) host_tables += bytes;
  }
  REQUIRE(host_tables > 0);
  const MemoryBreakdown& m = p.plan.stages[0].memory;
  // Data parallel: every device holds every parameter, but the host-placed tables are in host memory.
  CHECK(m.parameters == Approx(all - host_tables));
  CHECK(m.host >= host_tables * 3);  // the table, its gradient and at least its Adam moments' share
  CHECK(m.peak < m.parameters + m.gradients + m.optimizer_states + m.activations + m.communication_buffers + 1);
}

}  // namespace
}  // namespace shardlab
