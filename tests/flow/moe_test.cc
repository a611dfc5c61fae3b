// Mixture-of-experts layers and expert parallelism through the whole flow
// (run -> strategies -> plan -> analytical step) on the shipped Mixtral 8x7B
// run: tokens routed by AlltoAll over the expert group, experts split over it,
// their gradients reduced over the rest of data parallel, FLOPs by capacity.
#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/ops/flops.h"
#include "core/report/graph_summary.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Mixtral() { return LoadRunFile(testing::SourcePath("configs/runs/mixtral-8x7b-h100-64.json")); }

std::vector<const Task*> Collectives(const std::vector<Task>& tasks, Collective type) {
  std::vector<const Task*> out;
  for (const Task& t : tasks)
    if (t.kind == Task::Kind::kCollective && t.collective == type) out.push_back(&t);
  return out;
}

// Forward FLOPs of the products whose names contain `part`.
double GemmFlops(const Graph& graph, const std::string& part) {
  double flops = 0;
  for (const Operator& op : graph.operators())
    if ((op.type == "MatMul" || op.type == "BatchMatMul") && op.name.find(part) != std::string::npos)
      flops += ComputeOpWork(graph, op).forward_flops;
  return flops;
}

TEST_CASE("expert parallel sends tokens to their experts and back by AlltoAll inside the expert group") {
  const PreparedRun run = Prepare(Mixtral());
  const StageProgram& stage = run.plan.stages[0];
  const int layers = 8;  // 32 layers over 4 stages
  // One exchange out (after dispatch) and one back (before combine) per layer, both ways in backward.
  const auto forward = Collectives(stage.forward, Collective::kAllToAll);
  CHECK(forward.size() == 2 * layers);
  CHECK(Collectives(stage.backward, Collective::kAllToAll).size() == 2 * layers);
  for (const Task* t : forward) {
    INFO(t->name);
    CHECK(t->dimension == CommDimension::kExpert);
    const CommGroupSpec& group = stage.groups[t->group];
    CHECK(group.size == 8);               // expert_parallel
    CHECK(group.placement.servers == 1);  // tensor parallel 1: the expert group is one DGX
    // Each device's slice [groups, experts, capacity, hidden] is 1 sample x 8 experts x 1024 slots x 4096, bf16.
    CHECK(t->comm_bytes == 8.0 * 1024 * 4096 * 2);
  }
  // No tensor parallelism: nothing else communicates inside a pass.
  CHECK(Collectives(stage.forward, Collective::kAllReduce).empty());
  CHECK(Collectives(stage.forward, Collective::kAllGather).empty());
  const StepResult result = Summarize(run.plan, RunAnalytical(run.plan));
  bool reported = false;
  for (const DimensionCommunication& c : result.stages[0].communication)
    if (c.dimension == CommDimension::kExpert) reported = c.bytes > 0 && c.seconds > 0;
  CHECK(reported);
}

TEST_CASE("each expert runs one product over every token routed to it, whatever group the token came from") {
  const PreparedRun run = Prepare(Mixtral());
  int products = 0;
  for (const Task& t : run.plan.stages[0].forward) {
    if (t.name != "layer0/moe/experts.gate_up/forward" && t.name != "layer0/moe/experts.projection/forward") continue;
    INFO(t.name);
    ++products;
    // After the exchange a device holds its one expert's slots from the 8
    // groups of its expert group: 8 x 1024 rows against one weight, as
    // the stacks' grouped GEMMs gather them, not 8 products of 1024.
    CHECK(t.kernel.gemm.m == 8 * 1024);
    CHECK(t.kernel.gemm.batch == 1);
  }
  CHECK(products == 2);
}

TEST_CASE("a device holding several experts sorts the tokens it receives by expert, and back before sending") {
  auto sorts = [](const std::vector<Task>& tasks) {
    std::vector<const Task*> out;
    for (const Task& t : tasks)
      if (t.name.find("sort_by_expert") != std::string::npos) out.push_back(&t);
    return out;
  };
  // One expert per device (expert parallel 8 over 8 experts): nothing to sort.
  CHECK(sorts(Prepare(Mixtral()).plan.stages[0].forward).empty());
  RunSpec spec = Mixtral();
  spec.model.params.Set("expert_parallel", int64_t{4});
  const PreparedRun run = Prepare(spec);
  const StageProgram& stage = run.plan.stages[0];
  const int layers = 8;
  for (const bool backward : {false, true}) {
    const std::vector<Task>& tasks = backward ? stage.backward : stage.forward;
    const auto found = sorts(tasks);
    // After each exchange out and each exchange back, in both passes (the
    // recomputed forward reads the tokens its layer kept: no exchange, no sort).
    CHECK(found.size() == 2 * layers);
    for (const Task* t : found) {
      INFO(t->name);
      const Task& exchange = *(t - 1);
      CHECK(exchange.collective == Collective::kAllToAll);
      // The slots of the device's two experts, as many bytes as the exchange moves, read and written.
      CHECK(t->bytes == 2.0 * exchange.comm_bytes);
      CHECK(t->seconds > 0);
    }
  }
}

TEST_CASE("moe_fp8_dispatch sends the tokens to their experts in FP8 and everything else as before") {
  const PreparedRun plain = Prepare(Mixtral());
  RunSpec spec = Mixtral();
  spec.model.params.Set("moe_fp8_dispatch", true);
  const PreparedRun fp8 = Prepare(spec);
  for (const bool backward : {false, true}) {
    const auto& a = backward ? plain.plan.stages[0].backward : plain.plan.stages[0].forward;
    const auto& b = backward ? fp8.plan.stages[0].backward : fp8.plan.stages[0].forward;
    const auto x = Collectives(a, Collective::kAllToAll), y = Collectives(b, Collective::kAllToAll);
    REQUIRE(x.size() == y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      INFO(y[i]->name << (backward ? " backward" : " forward"));
      // bf16 (2 bytes) becomes a byte and 4 bytes per 128 on the way to the experts, forward only.
      const bool out = !backward && y[i]->name.find("experts.") != std::string::npos;
      CHECK(y[i]->comm_bytes == Approx(out ? x[i]->comm_bytes * (1 + 4.0 / 128) / 2 : x[i]->comm_bytes));
      if (out) CHECK(y[i]->seconds < 0.6 * x[i]->seconds);
    }
  }
}

TEST_CASE("MindSpore without enable_alltoall exchanges tokens by AllGather and a local slice") {
  RunSpec spec = Mixtral();
  spec.parallel.enable_alltoall = false;
  const PreparedRun gathered = Prepare(spec), exchanged = Prepare(Mixtral());
  const StageProgram& stage = gathered.plan.stages[0];
  CHECK(Collectives(stage.forward, Collective::kAllToAll).empty());
  CHECK(Collectives(stage.forward, Collective::kAllGather).size() == 16);
  CHECK(Collectives(stage.backward, Collective::kReduceScatter).size() == 16);
  CHECK(Summarize(gathered.plan, RunAnalytical(gathered.plan)).step_seconds >
        Summarize(exchanged.plan, RunAnalytical(exchanged.plan)).step_seconds);
}

TEST_CASE("each device holds experts over expert_parallel and reduces their gradients over the rest of data parallel") {
  RunSpec spec = Mixtral();
  const PreparedRun ep8 = Prepare(spec);
  spec.model.params.Set("expert_parallel", int64_t{1});
  const PreparedRun ep1 = Prepare(spec);
  // Stage 1 holds 8 layers of 3 expert matrices [8, 14336, 4096], bf16; EP8 keeps one expert of 8.
  const double experts = 8.0 * 3 * 8 * 14336 * 4096 * 2;
  CHECK(ep1.plan.stages[1].memory.parameters - ep8.plan.stages[1].memory.parameters ==
        Approx(experts * 7 / 8).epsilon(1e-9));
  // Expert gradients are replicated over data_parallel / expert_parallel = 2 devices only.
  bool pair = false;
  for (const GradientBucket& b : ep8.plan.stages[1].buckets) pair |= ep8.plan.stages[1].groups[b.group].size == 2;
  CHECK(pair);
}

TEST_CASE("experts compute 2 FLOPs per weight per routed token times the capacity factor") {
  RunSpec spec = Mixtral();
  const Graph graph = Prepare(spec).graph;
  const double tokens = 16 * 4096, k = 2, hidden = 4096, ffn = 14336;
  CHECK(GemmFlops(graph, "layer0/moe/experts.") == Approx(2 * 3 * hidden * ffn * k * tokens).epsilon(1e-12));
  // The router scores every expert for every token.
  CHECK(GemmFlops(graph, "layer0/moe/router") == 2 * hidden * 8 * tokens);
  // Capacity 1.25: 1280 slots per expert and sample instead of 1024.
  spec.model.params.Set("capacity_factor", 1.25);
  CHECK(GemmFlops(Prepare(spec).graph, "layer0/moe/experts.") ==
        Approx(1.25 * 2 * 3 * hidden * ffn * k * tokens).epsilon(1e-12));
}

TEST_CASE("shared experts and leading dense layers add their MLPs to the parameter count") {
  RunSpec spec = Mixtral();
  spec.model.params.Set("layers", int64_t{4});
  spec.parallel.pipeline_stages = 1;
  spec.parallel.device_num = 16;
  const double base = static_cast<double>(SummarizeGraph(Prepare(spec).graph, 1).parameters);
  spec.model.params.Set("shared_experts", int64_t{2});
  spec.model.params.Set("moe_ffn_hidden", int64_t{1024});
  spec.model.params.Set("first_dense_layers", int64_t{1});
  const double changed = static_cast<double>(SummarizeGraph(Prepare(spec).graph, 1).parameters);
  const double h = 4096, dense = 3 * h * 14336, expert = 3 * h * 1024, router = 8 * h;
  // Layer 0 turns dense; layers 1-3 have experts of 1024 and a shared MLP of 2 x 1024.
  const double before = 4 * (8 * 3 * h * 14336 + router);
  const double after = dense + 3 * (8 * expert + router + 2 * expert);
  CHECK(changed - base == Approx(after - before).epsilon(1e-12));
}

TEST_CASE("dynamic programming searches a mixture-of-experts model, which MindSpore's exact rules do not reduce") {
  // The norm's output feeds the router and the dispatch, TopK feeds the
  // dispatch and the combine, the residual spans the layer: a K4 minor, left
  // to the star fallback.
  RunSpec spec = Mixtral();
  spec.model.params.Set("layers", int64_t{4});
  spec.parallel.parallel_mode = ParallelMode::kAutoParallel;
  spec.parallel.search_mode = SearchMode::kDynamicProgramming;
  PreparedRun run;
  REQUIRE_NOTHROW(run = Prepare(spec));
  CHECK(Summarize(run.plan, RunAnalytical(run.plan)).step_seconds > 0);
}

TEST_CASE("DeepSeek-V3 on 2048 H800 exchanges tokens across servers and fits with recompute") {
  const PreparedRun run = Prepare(LoadRunFile(testing::SourcePath("configs/runs/deepseek-v3-h800-2048.json")));
  // Stage 0 holds the three dense layers; stage 2 four MoE layers.
  CHECK(Collectives(run.plan.stages[0].forward, Collective::kAllToAll).empty());
  const auto exchanges = Collectives(run.plan.stages[2].forward, Collective::kAllToAll);
  CHECK(exchanges.size() == 2 * 4);
  for (const Task* t : exchanges) {
    const CommGroupSpec& group = run.plan.stages[2].groups[t->group];
    CHECK(group.size == 64);
    CHECK(group.placement.servers == 8);
  }
  const StepResult result = Summarize(run.plan, RunAnalytical(run.plan));
  for (const StageResult& stage : result.stages) CHECK(stage.memory.peak < run.plan.device_memory);
}

TEST_CASE("a flex dispatch crosses servers once per server a token reaches, so DeepSeek-V3's exchanges halve") {
  RunSpec spec = LoadRunFile(testing::SourcePath("configs/runs/deepseek-v3-h800-2048.json"));
  REQUIRE(spec.model.params.String("moe_token_dispatcher") == "flex");
  const PreparedRun flex = Prepare(spec);
  spec.model.params.Set("moe_token_dispatcher", std::string("alltoall"));
  const PreparedRun alltoall = Prepare(spec);
  for (const bool backward : {false, true}) {
    const auto& a = backward ? alltoall.plan.stages[2].backward : alltoall.plan.stages[2].forward;
    const auto& b = backward ? flex.plan.stages[2].backward : flex.plan.stages[2].forward;
    const auto x = Collectives(a, Collective::kAllToAll), y = Collectives(b, Collective::kAllToAll);
    REQUIRE(x.size() == y.size());
    REQUIRE_FALSE(y.empty());
    for (size_t i = 0; i < x.size(); ++i) {
      INFO(y[i]->name << (backward ? " backward" : " forward"));
      // Each token reaches 4 of the 8 servers (group-limited routing): half the crossing of its 8 copies.
      CHECK(x[i]->crossing_share == 1);
      CHECK(y[i]->crossing_share == Approx(0.5));
      CHECK(y[i]->comm_bytes == x[i]->comm_bytes);
      CHECK(y[i]->seconds < 0.6 * x[i]->seconds);
    }
  }
  // Other collectives keep their cost.
  CHECK(Collectives(flex.plan.stages[2].forward, Collective::kAllReduce).size() ==
        Collectives(alltoall.plan.stages[2].forward, Collective::kAllReduce).size());
  CHECK(Summarize(flex.plan, RunAnalytical(flex.plan)).step_seconds <
        Summarize(alltoall.plan, RunAnalytical(alltoall.plan)).step_seconds);
  // Without group-limited routing a token reaches 1 - C(224,8)/C(256,8) = 66% of the servers.
  spec.model.params.Set("moe_token_dispatcher", std::string("flex"));
  spec.model.params.Set("moe_router_num_groups", int64_t{1});
  spec.model.params.Set("moe_router_group_topk", int64_t{1});
  const PreparedRun ungrouped_run = Prepare(spec);
  const auto ungrouped = Collectives(ungrouped_run.plan.stages[2].forward, Collective::kAllToAll);
  REQUIRE_FALSE(ungrouped.empty());
  CHECK(ungrouped[0]->crossing_share == Approx(0.6618).epsilon(0.001));
  // Bad groups name the rule.
  spec.model.params.Set("moe_router_num_groups", int64_t{3});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("moe_router_num_groups 3 does not divide experts 256"));
  spec.model.params.Set("moe_router_num_groups", int64_t{8});
  spec.model.params.Set("moe_router_group_topk", int64_t{9});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("moe_router_group_topk 9 exceeds moe_router_num_groups 8"));
  spec.model.params.Set("moe_router_group_topk", int64_t{0});
  CHECK_THROWS(Prepare(spec));
  spec.model.params.Set("moe_router_num_groups", int64_t{64});
  spec.model.params.Set("moe_router_group_topk", int64_t{1});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("experts_per_token 8 exceeds the 4 experts"));
}

TEST_CASE("recompute_modules recomputes the parts it names, each on the layers that have it") {
  // DeepSeek-V3 on 2048 H800 without full recompute, one pass at a time: stage 0 holds the 3 dense
  // layers, stage 2 four MoE layers; one sample of 4096 tokens per device, 128 heads, no tensor parallelism.
  RunSpec spec = LoadRunFile(testing::SourcePath("configs/runs/deepseek-v3-h800-2048.json"));
  spec.parallel.recompute = false;
  spec.simulation.overlap_forward_backward.clear();
  struct Figures {
    double dense, moe;                  // activations per micro-batch, stages 0 and 2
    double dense_compute, moe_compute;  // seconds of compute per step
  };
  auto figures = [&](std::vector<RecomputeModule> modules) {
    RunSpec run = spec;
    run.parallel.recompute_modules = std::move(modules);
    const PreparedRun prepared = Prepare(run);
    const StepResult r = Summarize(prepared.plan, RunAnalytical(prepared.plan));
    return Figures{prepared.plan.stages[0].memory.activations_per_micro_batch,
                   prepared.plan.stages[2].memory.activations_per_micro_batch, r.stages[0].compute_seconds,
                   r.stages[2].compute_seconds};
  };
  const Figures none = figures({});
  // mla_up_proj: the attention no longer keeps the queries, keys and values it read (Megatron's
  // CheckpointWithoutOutput): 4096 x 128 x (192 + 192 + 128) x 2 bytes a layer, recomputed instead.
  const Figures up = figures({RecomputeModule::kMlaUpProjection});
  const double qkv = 4096.0 * 128 * (192 + 192 + 128) * 2;
  CHECK(none.moe - up.moe == Approx(4 * qkv).epsilon(0.03));
  CHECK(none.dense - up.dense == Approx(3 * qkv).epsilon(0.03));
  CHECK(up.moe_compute > none.moe_compute);
  // mlp: the dense layers' MLPs only; moe: the MoE layers whole; moe_act and shared_experts parts of them.
  const Figures mlp = figures({RecomputeModule::kMlp});
  CHECK(mlp.dense < none.dense);
  CHECK(mlp.moe == none.moe);
  CHECK(mlp.moe_compute == Approx(none.moe_compute));
  const Figures moe = figures({RecomputeModule::kMoe});
  const Figures act = figures({RecomputeModule::kMoeActivation});
  const Figures shared = figures({RecomputeModule::kSharedExperts});
  CHECK(moe.dense == none.dense);
  for (const Figures* f : {&moe, &act, &shared}) {
    CHECK(f->moe < none.moe);
    CHECK(f->moe_compute > none.moe_compute);
  }
  CHECK(moe.moe < act.moe);
  CHECK(moe.moe < shared.moe);
  // layernorm: the norms' outputs go (the one an FP8 product reads, kept in FP8, or bf16 otherwise).
  const Figures norms = figures({RecomputeModule::kLayerNorm});
  CHECK(norms.moe < none.moe);
  CHECK(none.moe - norms.moe <= 4 * 2 * 4096.0 * 7168 * 2);
  // core_attn is select_recompute: nothing to drop under flash attention.
  CHECK(figures({RecomputeModule::kCoreAttention}).moe == none.moe);
  // Together, the savings add up.
  const Figures both = figures({RecomputeModule::kMlaUpProjection, RecomputeModule::kMoeActivation});
  CHECK(none.moe - both.moe == Approx((none.moe - up.moe) + (none.moe - act.moe)).epsilon(0.01));
}

// Mixtral's stage of 16 devices as data_parallel 4 x model_parallel 4 with sequence parallelism.
RunSpec MixtralTensorParallel(int64_t expert_parallel, int64_t expert_tensor_parallel) {
  RunSpec spec = Mixtral();
  spec.model.params.Set("data_parallel", int64_t{4});
  spec.model.params.Set("model_parallel", int64_t{4});
  spec.model.params.Set("use_seq_parallel", true);
  spec.model.params.Set("expert_parallel", expert_parallel);
  spec.model.params.Set("expert_tensor_parallel", expert_tensor_parallel);
  return spec;
}

// A collective other than the token exchange (AlltoAll) whose name contains `part`.
bool AnyReductionNamed(const std::vector<Task>& tasks, const std::string& part) {
  for (const Task& t : tasks)
    if (t.kind == Task::Kind::kCollective && t.collective != Collective::kAllToAll &&
        t.name.find(part) != std::string::npos)
      return true;
  return false;
}

TEST_CASE("expert_tensor_parallel 1 folds the tensor-parallel devices into the expert group") {
  // Megatron's MoE parallel folding: expert_parallel 8 over data_parallel 4
  // x model_parallel 4, each expert whole on its device.
  const PreparedRun folded = Prepare(MixtralTensorParallel(8, 1));
  const StageProgram& stage = folded.plan.stages[0];
  const auto exchanges = Collectives(stage.forward, Collective::kAllToAll);
  REQUIRE(!exchanges.empty());
  for (const Task* t : exchanges) {
    INFO(t->name);
    const CommGroupSpec& group = stage.groups[t->group];
    CHECK(group.size == 8);               // the tensor-parallel neighbours are in it
    CHECK(group.placement.servers == 1);  // 8 consecutive devices: one DGX
  }
  // Whole experts: nothing reduces their products across devices.
  CHECK_FALSE(AnyReductionNamed(stage.forward, "moe/experts."));
  // Each expert's weights are copied on 16 / 8 = 2 devices, which reduce its gradients.
  bool pair = false;
  for (const GradientBucket& b : stage.buckets) pair |= stage.groups[b.group].size == 2;
  CHECK(pair);

  // By default the experts split their inner size over model_parallel, as the
  // dense layers do, and the row-parallel projection reduces across it.
  const PreparedRun split = Prepare(MixtralTensorParallel(4, 0));
  CHECK(AnyReductionNamed(split.plan.stages[0].forward, "moe/experts.projection"));
  for (const Task* t : Collectives(split.plan.stages[0].forward, Collective::kAllToAll))
    CHECK(split.plan.stages[0].groups[t->group].size == 4);
  // One whole expert per device, where expert_tensor_parallel 2 would keep half of one: stage 1
  // holds 8 layers of 3 expert matrices of 14336 x 4096, bf16.
  const PreparedRun halves = Prepare(MixtralTensorParallel(8, 2));
  CHECK(folded.plan.stages[1].memory.parameters - halves.plan.stages[1].memory.parameters ==
        Approx(8.0 * 3 * 14336 * 4096 * 2 / 2).epsilon(1e-9));
}

TEST_CASE("expert_parallel must divide the experts and data_parallel and needs experts") {
  RunSpec spec = Mixtral();
  spec.model.params.Set("expert_parallel", int64_t{3});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("expert_parallel 3 does not divide experts 8"));
  spec = Mixtral();
  spec.model.params.Set("expert_parallel", int64_t{8});
  spec.model.params.Set("data_parallel", int64_t{4});
  spec.model.params.Set("model_parallel", int64_t{4});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("expert_parallel 8 does not divide data_parallel 4"));
  spec = Mixtral();
  spec.model.params.Set("experts", int64_t{0});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("needs a mixture-of-experts model"));
  spec = Mixtral();
  spec.model.params.Set("expert_parallel", int64_t{1});
  spec.model.params.Set("experts", int64_t{0});
  spec.model.params.Set("expert_tensor_parallel", int64_t{1});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("expert_tensor_parallel needs a mixture-of-experts model"));
  CHECK_THROWS_WITH(Prepare(MixtralTensorParallel(8, 3)),
                    Catch::Contains("expert_parallel x expert_tensor_parallel = 8 x 3 does not divide the "
                                    "data_parallel x model_parallel = 16 devices"));
  spec = MixtralTensorParallel(2, 1);  // 8 copies of each expert
  spec.model.params.Set("use_seq_parallel", false);
  spec.parallel.global_batch_size = 64;  // 4 sequences per micro-batch: 4 token groups
  spec.model.params.Set("batch", int64_t{4});
  CHECK_THROWS_WITH(Prepare(spec), Catch::Contains("do not divide the 4 token groups routed per micro-batch (batch)"));
}

TEST_CASE(
    "MindSpore's pp_1f1b_overlap moves the collectives of the operator types it names, whatever their dimension") {
  // Mixtral's stages as data_parallel 4 x model_parallel 4 with sequence parallelism, expert parallel 4.
  const RunSpec spec = MixtralTensorParallel(4, 1);
  const auto step = [](const RunSpec& run) {
    const PreparedRun prepared = Prepare(run);
    return Summarize(prepared.plan, RunAnalytical(prepared.plan)).step_seconds;
  };
  const auto with_types = [&](std::vector<OverlapOperator> types) {
    RunSpec run = spec;
    run.ascend_config.pp_1f1b_overlap = std::move(types);
    return run;
  };
  const auto with_dimensions = [&](std::vector<CommDimension> dimensions) {
    RunSpec run = spec;
    run.simulation.overlap_forward_backward = std::move(dimensions);
    return run;
  };
  const double serial = step(spec);
  // The token exchanges are the stage's only AlltoAlls: the same as overlapping the expert dimension.
  const double alltoall = step(with_types({OverlapOperator::kAlltoAll, OverlapOperator::kAlltoAllV}));
  CHECK(alltoall < serial);
  CHECK(alltoall == Approx(step(with_dimensions({CommDimension::kExpert}))).epsilon(1e-9));
  // The sequence-parallel gathers and scatters are the sequence dimension's AllGathers and ReduceScatters.
  const double gathers = step(with_types({OverlapOperator::kMorphAllGather, OverlapOperator::kMorphReduceScatter}));
  CHECK(gathers < serial);
  CHECK(gathers != Approx(alltoall));
  // Every type MindSpore lists moves what every dimension does.
  CHECK(step(with_types({OverlapOperator::kAlltoAll, OverlapOperator::kAllGather, OverlapOperator::kReduceScatter,
                         OverlapOperator::kAllReduce})) ==
        Approx(step(with_dimensions({CommDimension::kTensor, CommDimension::kData, CommDimension::kPipeline,
                                     CommDimension::kExpert, CommDimension::kContext, CommDimension::kSequence})))
            .epsilon(1e-9));
}

}  // namespace
}  // namespace shardlab
