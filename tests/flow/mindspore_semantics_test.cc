// MindSpore's documented behaviour, checked through the whole flow (run ->
// strategies -> plan -> analytical step) on the shipped runs.
#include <algorithm>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/report/rank_view.h"
#include "core/report/run_summary.h"
#include "core/report/step_result.h"
#include "core/util/json_reader.h"
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
  run.parallel.comm_fusion.allreduce = FusionSetting{};  // its split indices are past the 2-layer model's gradients
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
    if (devices == 8)
      forward_at_8 = step.stages[0].forward_seconds;
    else
      CHECK(step.stages[0].forward_seconds == Approx(forward_at_8).epsilon(1e-9));
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

TEST_CASE("global_rank selects the rank whose groups, slices and timeline the report shows") {
  RunSpec run = Shipped("tiny-gpt-cpu-mp2-pp2");  // 4 devices: model parallel 2 x 2 stages
  run.parallel.global_rank = 3;
  const PreparedRun p = Prepare(run);
  const RankView three = ViewRank(p.run, p.sharded, p.plan, 3);
  const RankView two = ViewRank(p.run, p.sharded, p.plan, 2);
  CHECK(three.stage == 1);
  // Its groups are the ones that hold it: the model-parallel pair [2, 3].
  REQUIRE_FALSE(three.groups.empty());
  for (const RankGroup& g : three.groups) {
    CHECK(std::count(g.ranks.begin(), g.ranks.end(), 3) == 1);
    CHECK_FALSE(g.collectives.empty());
  }
  CHECK(std::any_of(three.groups.begin(), three.groups.end(), [](const RankGroup& g) {
    return g.ranks == std::vector<int64_t>{2, 3};
  }));
  // Its slices: stage 1's parameters; where a weight is split, rank 3 holds the other half from rank 2.
  REQUIRE(three.slices.size() == two.slices.size());
  REQUIRE_FALSE(three.slices.empty());
  int split = 0;
  for (size_t i = 0; i < three.slices.size(); ++i) {
    const RankSlice &a = three.slices[i], &b = two.slices[i];
    CHECK(a.parameter == b.parameter);
    CHECK(a.slice == b.slice);
    for (size_t d = 0; d < a.shape.size(); ++d) CHECK(a.offset[d] + a.slice[d] <= a.shape[d]);
    if (a.slice != a.shape) {
      ++split;
      CHECK(a.offset != b.offset);
    }
  }
  CHECK(split > 0);
  // The step's figures for stage 1 come from rank 3's timeline; stage 0 keeps its first rank.
  CHECK(p.plan.RepresentativeRank(1) == 3);
  CHECK(p.plan.RepresentativeRank(0) == 0);
  CHECK_THAT(FormatRankView(three), Catch::Contains("global_rank 3: stage 1") && Catch::Contains("[2,3]"));
  CHECK(ToJson(three)["slices"].size() == three.slices.size());
  CHECK_THROWS_WITH(ViewRank(p.run, p.sharded, p.plan, 4), Catch::Contains("rank 4 is not one of the run's 4 devices"));
}

TEST_CASE("data_parallel never redistributes: every device runs the network on its own batch") {
  // A Transpose moves the batch split to the columns; the ReLU after it splits its rows again.
  nlohmann::json doc = {
      {"name", "dp-transpose"},
      {"cluster", testing::SourcePath("configs/clusters/dgx-a100-hdr.json")},
      {"model", {{"name", "t"}, {"graph", nlohmann::json::parse(R"({"name": "t",
           "tensors": [{"name": "x", "kind": "input", "shape": [8, 16], "dtype": "float32"},
                       {"name": "w", "kind": "parameter", "shape": [16, 16], "dtype": "float32"}],
           "operators": [{"name": "mm", "type": "MatMul", "inputs": ["x", "w"]},
                         {"name": "t", "type": "Transpose", "inputs": ["mm"], "attrs": {"perm": [1, 0]}},
                         {"name": "act", "type": "ReLU", "inputs": ["t"]}]})")}}},
      {"parallel", {{"parallel_mode", "semi_auto_parallel"}, {"device_num", 8}, {"global_batch_size", 8}}}};
  auto redistributions = [](const Plan& plan) {
    int n = 0;
    for (const StageProgram& stage : plan.stages)
      for (const auto* tasks : {&stage.forward, &stage.backward})
        for (const Task& t : *tasks) n += t.name.find("/redistribute.") != std::string::npos;
    return n;
  };
  // Semi-auto parallel lays the ReLU out by rows and redistributes into it.
  CHECK(redistributions(Prepare(ReadRunSpec(JsonNode(doc, "dp.json"))).plan) > 0);
  doc["parallel"]["parallel_mode"] = "data_parallel";
  const PreparedRun dp = Prepare(ReadRunSpec(JsonNode(doc, "dp.json")));
  CHECK(dp.sharded.own_batch);
  CHECK(redistributions(dp.plan) == 0);
  // So do the shipped data-parallel runs.
  for (const char* name : {"bert-large-a100-8", "resnet50-ascend-8", "tiny-gpt-cpu-dp4", "wide-deep-host-ascend-8"}) {
    INFO(name);
    CHECK(redistributions(Prepare(Shipped(name)).plan) == 0);
  }
}

TEST_CASE("the analytical engine refuses a step whose task count passes its limit") {
  // A million micro-batches of GPT-3 would take minutes and gigabytes: refused before any work.
  RunSpec run = Shipped("gpt3-175b-ascend-4096");
  run.parallel.micro_batch_num = 1 << 20;
  run.parallel.global_batch_size = int64_t{1} << 25;
  run.model.params.Set("batch", run.parallel.micro_batch_size());
  const PreparedRun prepared = Prepare(run);
  CHECK(TaskRunsPerStep(prepared.plan) > kMaxAnalyticalTaskRuns);
  CHECK_THROWS_WITH(RunAnalytical(prepared.plan), Catch::Contains("x 1048576 micro-batches") &&
                                                      Catch::Contains("analytical engine's limit of 40000000"));
}

}  // namespace
}  // namespace shardlab
