// LoRA fine-tuning through the whole flow on LLaMA-2 70B (TP 8 with sequence
// parallelism, PP 4, DP 32): the base model frozen, rank-16 adapters beside
// the fused query/key/value layer; what each of gradients, optimizer states,
// backward FLOPs, kept activations and gradient traffic becomes.
#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/plan/operator_cost.h"
#include "core/report/graph_summary.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Llama70b(int64_t lora_rank, const std::string& targets = "attention_qkv") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.model.params.Set("lora_rank", lora_rank);
  run.model.params.Set("lora_targets", targets);
  run.parallel.recompute = false;
  return run;
}

const Task* BackwardOf(const StageProgram& stage, const std::string& name) {
  for (const Task& t : stage.backward)
    if (t.name == name) return &t;
  return nullptr;
}

TEST_CASE("LoRA trains only its adapters") {
  const PreparedRun full = Prepare(Llama70b(0)), lora = Prepare(Llama70b(16));
  const GraphSummary base = SummarizeGraph(full.graph, 1), tuned = SummarizeGraph(lora.graph, 1);
  // 80 layers, each A [16, 8192] and B [(64 + 2 x 8) x 128, 16] beside the fused query/key/value layer.
  const int64_t adapters = 80 * (16 * 8192 + 10240 * 16);
  CHECK(tuned.parameters == adapters);
  CHECK(tuned.non_trainable_parameters == base.parameters);
  const StageProgram &a = full.plan.stages[1], &b = lora.plan.stages[1];
  // The frozen weights are still held; only the adapters have gradients and Adam's states.
  CHECK(b.memory.parameters > a.memory.parameters);
  // Stage 1's 20 adapters per device: A whole, B split 8 ways like the weight, bf16 gradients.
  CHECK(b.memory.gradients == 20 * (16 * 8192 + 10240 / 8 * 16) * 2.0);
  CHECK(b.memory.optimizer_states < a.memory.optimizer_states / 20);
  // A frozen layer's backward forms only its input's gradient: one product of two.
  const Task* frozen = BackwardOf(b, "layer20/ffn/gate_up/backward");
  const Task* trained = BackwardOf(a, "layer20/ffn/gate_up/backward");
  REQUIRE(frozen);
  REQUIRE(trained);
  CHECK(frozen->flops == Approx(trained->flops / 2));
  // The strategy search and the GUI price the operator as lowering does.
  const int op = frozen->op;
  const Operator& gate_up = lora.graph.op(op);
  CHECK(BackwardShare(lora.graph, gate_up) == 0.5);
  CHECK(BackwardShare(full.graph, full.graph.op(trained->op)) == 1);
  const OpLayout& layout = lora.sharded.layouts[static_cast<size_t>(op)];
  const double forward = OperatorComputeSeconds(lora.graph, gate_up, layout, lora.run.cluster, false);
  const double both = OperatorComputeSeconds(lora.graph, gate_up, layout, lora.run.cluster, true);
  CHECK(both - forward == Approx(frozen->seconds).epsilon(1e-9));
  // Its input is no longer kept for a weight gradient, so fewer activations.
  CHECK(b.memory.activations_per_micro_batch < a.memory.activations_per_micro_batch);
  // The data-parallel gradient traffic is the adapters'.
  const StepResult x = Summarize(full.plan, RunAnalytical(full.plan));
  const StepResult y = Summarize(lora.plan, RunAnalytical(lora.plan));
  const auto data = static_cast<size_t>(CommDimension::kData);
  CHECK(y.stages[1].communication[data].bytes < x.stages[1].communication[data].bytes / 100);
  CHECK(y.step_seconds < x.step_seconds);
  // Model FLOPs (for TFLOP/s and MFU) count no weight gradients: 4 N per token against 6 N, as NeMo
  // counts, beside attention's 12 s h per layer and token, which has no weights and stays whole.
  const double h = 8192, weights = 80 * (2 * h * h + 2 * h * 1024 + 3 * h * 28672) + 32000 * h;
  const double attention = 12 * 4096 * h * 80;
  const double ratio = lora.plan.model_flops / full.plan.model_flops;
  CHECK(ratio == Approx((4 * weights + attention) / (6 * weights + attention)).epsilon(0.005));
}

TEST_CASE("LoRA's frozen weights are neither sharded nor gathered by the parallel optimizer") {
  RunSpec run = Llama70b(16);
  run.parallel.parallel_optimizer_config.optimizer_level = OptimizerLevel::kLevel3;
  const PreparedRun lora = Prepare(run);
  RunSpec trained = run;
  trained.model.params.Set("lora_rank", int64_t{0});
  const PreparedRun full = Prepare(trained);
  const StageProgram &a = full.plan.stages[1], &b = lora.plan.stages[1];
  auto data_bytes = [](const StageProgram& s) {
    double bytes = 0;
    for (const auto* pass : {&s.forward, &s.backward, &s.step_start})
      for (const Task& t : *pass)
        if (t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kData) bytes += t.comm_bytes;
    return bytes;
  };
  CHECK(data_bytes(a) > 0);
  CHECK(data_bytes(b) < data_bytes(a) / 100);
  // Level3 keeps a trained weight's shard; a frozen one is held whole.
  CHECK(b.memory.parameters > 4 * a.memory.parameters);
}

TEST_CASE("LoRA adapters beside row-parallel layers reduce their narrow product") {
  const PreparedRun lora = Prepare(Llama70b(16, "all"));
  const StageProgram& s = lora.plan.stages[1];
  // Beside the row-parallel output projection, A splits like the weight: its [tokens, 16] partial
  // product is reduce-scattered over the tokens, as the layer's own under sequence parallelism.
  const Task* reduce = nullptr;
  for (const Task& t : s.forward)
    if (t.name == "layer20/attention/projection.lora_down/ReduceScatter") reduce = &t;
  REQUIRE(reduce);
  CHECK(reduce->comm_bytes == 4096.0 * 16 * 2);  // one sequence's [4096, 16] bf16 partial product
  CHECK(s.groups[reduce->group].size == 8);
  const GraphSummary tuned = SummarizeGraph(lora.graph, 1);
  // qkv, output projection, gate/up and down: (in + out) x 16 each.
  const int64_t per_layer = 16 * ((8192 + 10240) + (8192 + 8192) + (8192 + 2 * 28672) + (28672 + 8192));
  CHECK(tuned.parameters == 80 * per_layer);
}

TEST_CASE("LoRA gives every routed expert its own adapters, split over expert parallel like the experts") {
  RunSpec moe = LoadRunFile(testing::SourcePath("configs/runs/mixtral-8x7b-h100-64.json"));
  moe.model.params.Set("lora_rank", int64_t{16});
  moe.model.params.Set("lora_targets", std::string("mlp"));
  const PreparedRun run = Prepare(moe);
  // Per layer and expert: gate/up (4096 -> 2 x 14336) and down (14336 -> 4096), (in + out) x 16 each.
  CHECK(SummarizeGraph(run.graph, 1).parameters == 32 * 8 * 16 * ((4096 + 2 * 14336) + (14336 + 4096)));
  // One batched adapter pair per expert layer, the router without one.
  int64_t adapters = 0, router_adapters = 0;
  for (const Tensor& t : run.graph.tensors()) {
    const std::string suffix = "experts.gate_up.lora_a";
    adapters +=
        t.name.size() >= suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0;
    router_adapters += t.name.find("router.lora") != std::string::npos;
  }
  CHECK(adapters == 32);
  CHECK(router_adapters == 0);
  // The expert GEMM's thin adapters run beside it, after the expert exchange, on every device:
  // down, up and the add, for each of the stage's 8 layers.
  int thin = 0;
  for (const Task& t : run.plan.stages[1].forward)
    if (t.name.find("moe/experts.projection.lora_") != std::string::npos && t.kind == Task::Kind::kCompute) {
      ++thin;
      if (t.name.find("lora_add") == std::string::npos) {
        CHECK(t.kernel.gemm.batch == 1);  // one expert per device (expert parallel 8 over 8 experts)
        CHECK((t.kernel.gemm.n == 16 || t.kernel.gemm.k == 16));  // rank 16
      }
    }
  CHECK(thin == 3 * 8);
  // The tokens come to their experts once for the expert GEMM and its adapter, in each pass.
  RunSpec full = moe;
  full.model.params.Set("lora_rank", int64_t{0});
  auto exchanges = [](const StageProgram& s) {
    int n = 0;
    for (const auto* pass : {&s.forward, &s.backward})
      for (const Task& t : *pass) n += t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kExpert;
    return n;
  };
  CHECK(exchanges(run.plan.stages[1]) == exchanges(Prepare(full).plan.stages[1]));
  // With the adapters only on attention the experts train nothing.
  moe.model.params.Set("lora_targets", std::string("attention_qkv"));
  CHECK(SummarizeGraph(Prepare(moe).graph, 1).parameters == 32 * 16 * (4096 + 6144));
}

TEST_CASE("LoRA on latent attention adapts its replicated down and split up projections") {
  RunSpec mla = LoadRunFile(testing::SourcePath("configs/runs/deepseek-v3-h800-2048.json"));
  mla.model.params.Set("lora_rank", int64_t{16});
  const PreparedRun run = Prepare(mla);
  // q_down 7168 -> 1536, q_up 1536 -> 128 x 192, kv_down 7168 -> 576, kv_up 512 -> 128 x 256 per layer.
  const int64_t per_layer = 16 * ((7168 + 1536) + (1536 + 24576) + (7168 + 576) + (512 + 32768));
  CHECK(SummarizeGraph(run.graph, 1).parameters == 61 * per_layer);
}

}  // namespace
}  // namespace shardlab
