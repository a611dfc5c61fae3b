// The parallel optimizer's levels (ZeRO-1/2/3 as MindSpore's optimizer_level)
// and the host-offloaded Adam through the whole flow on the shipped LLaMA-2
// 70B run: each moves memory, communication and the step the way its
// formula says.
#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Llama70b(OptimizerLevel level) {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  REQUIRE(run.parallel.enable_parallel_optimizer);
  run.parallel.parallel_optimizer_config.optimizer_level = level;
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = false;
  return run;
}

double GatheredBytes(const std::vector<Task>& tasks) {
  double bytes = 0;
  for (const Task& t : tasks)
    if (t.kind == Task::Kind::kCollective && t.name.find("weight_gather") != std::string::npos) bytes += t.comm_bytes;
  return bytes;
}

double StepSeconds(const PreparedRun& r) { return Summarize(r.plan, RunAnalytical(r.plan)).step_seconds; }

constexpr double kDataParallel = 32;

TEST_CASE("optimizer_level level2 shards the gradients of optimizer-sharded weights") {
  const PreparedRun one = Prepare(Llama70b(OptimizerLevel::kLevel1));
  const PreparedRun two = Prepare(Llama70b(OptimizerLevel::kLevel2));
  const MemoryBreakdown &a = one.plan.stages[1].memory, &b = two.plan.stages[1].memory;
  // Every large weight is sharded 32 ways; the norm weights (16 KiB) stay whole.
  CHECK(b.gradients < a.gradients / (kDataParallel * 0.9));
  CHECK(b.optimizer_states == a.optimizer_states);
  CHECK(b.parameters == a.parameters);
  // The gradients are reduce-scattered after every micro-batch instead of once.
  bool every = false;
  for (const GradientBucket& g : two.plan.stages[1].buckets)
    if (g.collective == Collective::kReduceScatter) every = g.every_micro_batch;
  CHECK(every);
  for (const GradientBucket& g : one.plan.stages[1].buckets) CHECK_FALSE(g.every_micro_batch);
}

TEST_CASE("optimizer_level level3 gathers each weight before each pass and keeps only its shard") {
  const PreparedRun one = Prepare(Llama70b(OptimizerLevel::kLevel1));
  const PreparedRun three = Prepare(Llama70b(OptimizerLevel::kLevel3));
  const StageProgram &a = one.plan.stages[1], &b = three.plan.stages[1];
  // Level1 gathers the whole stage once per step; level3 the same bytes in
  // every forward and again in every backward, and nothing at the step start.
  double step_start = 0;
  for (const Task& t : a.step_start) step_start += t.comm_bytes;
  REQUIRE(step_start > 0);
  CHECK(b.step_start.empty());
  CHECK(GatheredBytes(b.forward) == Approx(step_start).epsilon(1e-9));
  CHECK(GatheredBytes(b.backward) == Approx(step_start).epsilon(1e-9));
  CHECK(GatheredBytes(a.forward) == 0);
  // At most the stage's first operator's gather waits; every other one is
  // prefetched as the compute before its operator starts, and its operator
  // waits for it.
  int gathers = 0, blocking = 0, prefetches = 0;
  for (const Task& t : b.forward) {
    if (t.name.find("weight_gather") != std::string::npos) {
      ++gathers;
      blocking += !t.prefetch;
      prefetches += t.prefetch;
    }
    CHECK(t.prefetches_needed <= prefetches);
  }
  CHECK(gathers >= 20 * 4);  // 20 layers of 4 sharded projections each
  CHECK(blocking <= 1);
  // The stage keeps 1/32 of its large weights, plus two operators' gathered weights.
  CHECK(b.memory.parameters < a.memory.parameters / (kDataParallel * 0.9));
  CHECK(b.memory.peak < a.memory.peak);
  // 64 more gathers of the stage's weights per step cannot all hide: a longer step.
  CHECK(StepSeconds(three) > StepSeconds(one));
}

TEST_CASE("weight_gather layer gathers each layer's weights in one AllGather, prefetched beside the layer before") {
  RunSpec run = Llama70b(OptimizerLevel::kLevel3);
  const PreparedRun each = Prepare(run);
  run.stack.weight_gather = WeightGather::kLayer;
  const PreparedRun layer = Prepare(run);
  const StageProgram &a = each.plan.stages[1], &b = layer.plan.stages[1];
  // The same bytes, one gather per layer and pass (the stage's 20 layers,
  // their weights sharded over one group), named for the layer.
  for (const bool forward : {true, false}) {
    const std::vector<Task>&x = forward ? a.forward : a.backward, &y = forward ? b.forward : b.backward;
    CHECK(GatheredBytes(y) == Approx(GatheredBytes(x)).epsilon(1e-9));
    std::vector<const Task*> gathers;
    for (const Task& t : y)
      if (t.name.find("weight_gather") != std::string::npos) gathers.push_back(&t);
    REQUIRE(gathers.size() == 20);
    CHECK(gathers.front()->name == (forward ? "layer20/forward.weight_gather" : "layer39/backward.weight_gather"));
    CHECK_FALSE(gathers.front()->prefetch);
    for (size_t i = 1; i < gathers.size(); ++i) CHECK(gathers[i]->prefetch);
  }
  // Layer 21's gather is issued before layer 20's first compute.
  const auto at = [&](const std::string& name) {
    for (size_t i = 0; i < b.forward.size(); ++i)
      if (b.forward[i].name == name) return i;
    return b.forward.size();
  };
  size_t first_compute = 0;
  while (b.forward[first_compute].kind != Task::Kind::kCompute) ++first_compute;
  CHECK(at("layer21/forward.weight_gather") < first_compute);
  // Layer 21's first compute waits for the pass's first prefetch (its
  // gather), layer 22's for the second; nothing of layer 20 waits.
  const auto needs = [&](const std::string& layer) {
    for (const Task& t : b.forward)
      if (t.kind == Task::Kind::kCompute && t.name.rfind(layer + "/", 0) == 0) return t.prefetches_needed;
    return -1;
  };
  CHECK(needs("layer20") == 0);
  CHECK(needs("layer21") == 1);
  CHECK(needs("layer22") == 2);
  // Buffers: two layers' gathered weights (the one computing, the next):
  // each gather carries a device's 1/32 of its layer.
  double largest = 0;
  for (const Task& t : b.forward)
    if (t.name.find("weight_gather") != std::string::npos) largest = std::max(largest, t.comm_bytes);
  CHECK(b.memory.communication_buffers == Approx(2 * kDataParallel * largest));
  // Twenty collectives per pass where there were a hundred: less latency, a shorter step.
  CHECK(StepSeconds(layer) < StepSeconds(each));
}

TEST_CASE("adam_offload keeps the optimizer states in host memory and moves gradients and weights over PCIe") {
  RunSpec run = Llama70b(OptimizerLevel::kLevel1);
  const PreparedRun device = Prepare(run);
  run.simulation.optimizer = Optimizer::kAdamOffload;
  const PreparedRun host = Prepare(run);
  const MemoryBreakdown &a = device.plan.stages[1].memory, &b = host.plan.stages[1].memory;
  CHECK(b.optimizer_states == 0);
  CHECK(b.host == Approx(a.host + a.optimizer_states));
  CHECK(b.peak == Approx(a.peak - a.optimizer_states));
  const std::vector<Task>& update = host.plan.stages[1].optimizer;
  REQUIRE(update.size() == 3);
  CHECK(update[0].pcie_copy);
  CHECK(update[1].on_host);
  CHECK(update[2].pcie_copy);
  // fp32 gradients out, bfloat16 weights back.
  CHECK(update[0].bytes == Approx(2 * update[2].bytes));
  CHECK(StepSeconds(host) > StepSeconds(device));
}

double DimensionSum(const StageResult& s, double DimensionCommunication::*field) {
  double sum = 0;
  for (const DimensionCommunication& c : s.communication) sum += c.*field;
  return sum;
}

const DimensionCommunication& Dimension(const StageResult& s, CommDimension d) {
  return s.communication.at(static_cast<size_t>(d));
}

TEST_CASE("communication splits by dimension into parts that add up to the stage's and survive JSON") {
  const PreparedRun one = Prepare(Llama70b(OptimizerLevel::kLevel1));
  const PreparedRun three = Prepare(Llama70b(OptimizerLevel::kLevel3));
  const StepResult a = Summarize(one.plan, RunAnalytical(one.plan));
  const StepResult b = Summarize(three.plan, RunAnalytical(three.plan));
  for (const StepResult* r : {&a, &b})
    for (const StageResult& s : r->stages) {
      REQUIRE(s.communication.size() == kCommDimensions);
      CHECK(DimensionSum(s, &DimensionCommunication::seconds) == Approx(s.communication_seconds).epsilon(1e-9));
      CHECK(DimensionSum(s, &DimensionCommunication::exposed_seconds) ==
            Approx(s.exposed_communication_seconds).epsilon(1e-9));
    }
  const StageResult &x = a.stages[1], &y = b.stages[1];
  const StageProgram& program = one.plan.stages[1];
  // Pipeline: one activation forward and one gradient back per micro-batch.
  CHECK(Dimension(x, CommDimension::kPipeline).bytes ==
        Approx(32 * (program.send_forward_bytes + program.send_backward_bytes)));
  // Level3 reduce-scatters the gradients after each of the 32 micro-batches and gathers the
  // stage's weights 64 times: data-parallel communication, more of it exposed; the
  // tensor-parallel collectives do not change.
  CHECK(Dimension(y, CommDimension::kData).bytes > 5 * Dimension(x, CommDimension::kData).bytes);
  CHECK(Dimension(y, CommDimension::kData).exposed_seconds > Dimension(x, CommDimension::kData).exposed_seconds);
  CHECK(Dimension(y, CommDimension::kTensor).bytes == Approx(Dimension(x, CommDimension::kTensor).bytes));
  const StageResult back = StageResultFromJson(ToJson(x));
  REQUIRE(back.communication.size() == kCommDimensions);
  CHECK(back.communication[1].dimension == CommDimension::kData);
  CHECK(back.communication[1].bytes == x.communication[1].bytes);
}

}  // namespace
}  // namespace shardlab
