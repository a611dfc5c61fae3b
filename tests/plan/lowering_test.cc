#include "core/plan/lowering.h"

#include <map>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/graph/graph_builder.h"
#include "core/ops/graph_layouts.h"
#include "core/plan/operator_cost.h"
#include "core/report/step_result.h"
#include "core/util/json_reader.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

// The analytical engine's step, summarised.
StepResult Analytical(const Plan& plan) { return Summarize(plan, RunAnalytical(plan)); }

using Ranges = std::vector<std::pair<size_t, size_t>>;

FusionSetting Fusion(FusionSetting::Mode mode, int64_t size_mb = 64, std::vector<int64_t> indices = {}) {
  FusionSetting f;
  f.mode = mode;
  f.size_mb = size_mb;
  f.indices = std::move(indices);
  return f;
}

TEST_CASE("fusion index mode uses inclusive end indices (N=10, [3,7])") {
  const std::vector<double> bytes(10, 4.0);
  CHECK(SplitIntoBuckets(bytes, Fusion(FusionSetting::Mode::kIndex, 64, {3, 7}), true, true, false) ==
        Ranges{{0, 4}, {4, 8}, {8, 10}});
  // Indices past the last gradient are skipped, as newer MindSpore warns and skips them.
  CHECK(SplitIntoBuckets(bytes, Fusion(FusionSetting::Mode::kIndex, 64, {3, 12}), true, true, false) ==
        Ranges{{0, 4}, {4, 10}});
  // The parallel optimizer ignores split indices.
  CHECK(SplitIntoBuckets(bytes, Fusion(FusionSetting::Mode::kIndex, 64, {3, 7}), true, false, true) == Ranges{{0, 10}});
}

TEST_CASE("by default everything is one bucket and openstate false fuses nothing") {
  const std::vector<double> bytes(5, 1e6);
  CHECK(SplitIntoBuckets(bytes, FusionSetting{}, true, true, false) == Ranges{{0, 5}});
  CHECK(SplitIntoBuckets(bytes, FusionSetting{}, false, true, false).size() == 5);
}

TEST_CASE("Megatron's DDP buckets fill from the last gradient and never hold two model chunks") {
  // max(40M, 1M x 8) elements a bucket: 30M + 30M close one.
  CHECK(MegatronDdpBuckets({30e6, 30e6, 30e6, 30e6}, {0, 0, 0, 0}, 8) == Ranges{{2, 4}, {0, 2}});
  // Four of 10M fit in one, unless a chunk boundary lies between them.
  CHECK(MegatronDdpBuckets({10e6, 10e6, 10e6, 10e6}, {0, 0, 0, 0}, 8) == Ranges{{0, 4}});
  CHECK(MegatronDdpBuckets({10e6, 10e6, 10e6, 10e6}, {0, 0, 1, 1}, 8) == Ranges{{2, 4}, {0, 2}});
  // Data parallel 64: 64M elements a bucket.
  CHECK(MegatronDdpBuckets({30e6, 30e6, 30e6}, {0, 0, 0}, 64) == Ranges{{0, 3}});
}

TEST_CASE("size mode follows MindSpore's two thresholds") {
  // data_parallel: MB x 262144 bytes; 1 MB -> 262144 bytes, gradients of 100000 bytes: the third
  // overflows the bucket, joins it and closes it.
  const std::vector<double> bytes(5, 100000.0);
  CHECK(SplitIntoBuckets(bytes, Fusion(FusionSetting::Mode::kSize, 1), true, true, false) == Ranges{{0, 3}, {3, 5}});
  // MindSpore's own example: auto (16 MiB), gradients of 10, 4, 8, 20, 1 MiB -> {0, 1, 2}, {3} alone, {4}.
  const double mib = 1 << 20;
  CHECK(SplitIntoBuckets({10 * mib, 4 * mib, 8 * mib, 20 * mib, mib}, Fusion(FusionSetting::Mode::kAuto, 64), true,
                         true, false) == Ranges{{0, 3}, {3, 4}, {4, 5}});
  // semi/auto: a budget of MB x 2^20 bytes; the gradient that overflows opens a new id without being charged.
  const std::vector<double> big = {600000, 600000, 600000, 600000};
  CHECK(SplitIntoBuckets(big, Fusion(FusionSetting::Mode::kSize, 1), true, false, false) ==
        Ranges{{0, 1}, {1, 3}, {3, 4}});
  // auto = 64 MB puts a small model into one bucket.
  CHECK(SplitIntoBuckets(bytes, Fusion(FusionSetting::Mode::kAuto, 64), true, false, false) == Ranges{{0, 5}});
}

Plan PlanFor(const RunSpec& run) { return Prepare(run).plan; }

RunSpec Shipped(const std::string& name) { return LoadRunFile(testing::SourcePath("configs/runs/" + name + ".json")); }

TEST_CASE("data-parallel ResNet-50: one gradient bucket by default, three with two split indices") {
  RunSpec run = Shipped("resnet50-ascend-8");
  Plan plan = PlanFor(run);
  REQUIRE(plan.stages.size() == 1);
  REQUIRE(plan.stages[0].buckets.size() == 1);
  const GradientBucket& all = plan.stages[0].buckets[0];
  CHECK(all.parameters.size() == 161);         // trainable tensors: 53 conv + 106 BN + 2 FC
  CHECK(all.bytes == Approx(25557032.0 * 4));  // gradient_fp32_sync
  CHECK(all.ready_after + 1 == static_cast<int>(plan.stages[0].backward.size()));
  run.parallel.comm_fusion.allreduce = {FusionSetting::Mode::kIndex, 64, {50, 120}};
  plan = PlanFor(run);
  const auto& buckets = plan.stages[0].buckets;
  REQUIRE(buckets.size() == 3);
  // Fusion order is parameter order, but the stream runs the buckets as they
  // become ready: the last layers' bucket first.
  CHECK(buckets[0].position == 121);
  CHECK(buckets[0].parameters.size() == 161 - 121);
  CHECK(buckets[2].position == 0);
  CHECK(buckets[2].parameters.size() == 51);
  CHECK(buckets[0].ready_after < buckets[1].ready_after);
  CHECK(buckets[1].ready_after < buckets[2].ready_after);
}

TEST_CASE("tensor-parallel GPT layers communicate forward and backward, recompute reruns them") {
  RunSpec run = Shipped("pangu-alpha-13b-ascend-512");
  run.model.params.Set("layers", int64_t{4});
  run.parallel.recompute = true;
  const Plan plan = PlanFor(run);
  REQUIRE(plan.stages.size() == 2);
  int forward_allreduce = 0, backward_allreduce = 0, recomputed = 0;
  for (const Task& t : plan.stages[0].forward)
    forward_allreduce += t.kind == Task::Kind::kCollective && t.collective == Collective::kAllReduce;
  for (const Task& t : plan.stages[0].backward) {
    backward_allreduce += t.kind == Task::Kind::kCollective && t.name.find("grad.AllReduce") != std::string::npos;
    recomputed += t.recompute && t.kind == Task::Kind::kCompute;
  }
  CHECK(forward_allreduce == 2 * 2);   // row-parallel projection and FFN output, 2 layers per stage
  CHECK(backward_allreduce >= 2 * 2);  // the column-parallel inputs' gradients
  CHECK(recomputed > 0);
  CHECK(plan.stages[0].send_forward_bytes > 0);
  CHECK(plan.stages[1].send_backward_bytes == plan.stages[0].send_forward_bytes);
  // The parallel optimizer gathers weights at step start (its ReduceScatters: next test).
  CHECK_FALSE(plan.stages[0].step_start.empty());
}

TEST_CASE("gradient_accumulation_shard reduce-scatters every micro-batch's gradients, not once per step") {
  RunSpec run = Shipped("pangu-alpha-13b-ascend-512");
  run.model.params.Set("layers", int64_t{4});
  REQUIRE(run.parallel.enable_parallel_optimizer);
  REQUIRE(run.parallel.micro_batch_num > 1);
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = true;  // MindSpore's default
  const Plan sharded = PlanFor(run);
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = false;
  const Plan whole = PlanFor(run);
  const int64_t M = sharded.micro_batches;
  // The same buckets; only the optimizer-sharded ReduceScatters run after every micro-batch.
  for (size_t s = 0; s < sharded.stages.size(); ++s) {
    const auto& a = sharded.stages[s].buckets;
    const auto& b = whole.stages[s].buckets;
    REQUIRE(a.size() == b.size());
    int every = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].bytes == b[i].bytes);
      CHECK(a[i].every_micro_batch == (a[i].collective == Collective::kReduceScatter));
      CHECK_FALSE(b[i].every_micro_batch);
      every += a[i].every_micro_batch;
    }
    CHECK(every > 0);
    // The memory saving: accumulated fp32 gradients are sharded with the optimizer.
    CHECK(sharded.stages[s].memory.gradients < whole.stages[s].memory.gradients);
  }
  // In the timeline: M runs of each such bucket, each after its micro-batch's backward, on the
  // communication stream beside the next passes; one run of each of the others.
  const Trace trace = RunAnalytical(sharded);
  std::map<std::string, std::vector<const TraceEvent*>> runs;
  std::map<int64_t, double> backward_start, backward_end;
  for (const TraceEvent& e : trace.events) {
    if (e.stage != 0) continue;
    if (e.kind == EventKind::kGradient) runs[e.name].push_back(&e);
    if (e.kind != EventKind::kBackward) continue;
    backward_start[e.micro_batch] = e.start;
    backward_end[e.micro_batch] = e.end();
  }
  const auto& buckets = sharded.stages[0].buckets;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const auto& r = runs["gradients " + std::to_string(i)];
    REQUIRE(static_cast<int64_t>(r.size()) == (buckets[i].every_micro_batch ? M : 1));
    if (!buckets[i].every_micro_batch) continue;
    for (int64_t m = 0; m < M; ++m) {
      CHECK(r[m]->micro_batch == m);
      CHECK(r[m]->start >= backward_start[m]);  // once its micro-batch's backward has produced the gradients
      if (m + 1 < M) CHECK(r[m]->start < backward_end[m + 1]);  // overlapping the next micro-batches
    }
  }
  // More communication, and a slower step than whole accumulation; one micro-batch accumulates nothing.
  const StepResult a = Analytical(sharded), b = Analytical(whole);
  CHECK(a.communication_seconds > b.communication_seconds);
  CHECK(a.step_seconds >= b.step_seconds);
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = true;
  run.parallel.micro_batch_num = 1;
  run.parallel.global_batch_size /= M;
  for (const auto& stage : PlanFor(run).stages)
    for (const auto& bucket : stage.buckets) CHECK_FALSE(bucket.every_micro_batch);
}

TEST_CASE("MicroBatchInterleaved hides tensor-parallel communication behind the other slice's compute") {
  RunSpec run = Shipped("pangu-alpha-13b-ascend-512");
  run.model.params.Set("layers", int64_t{4});
  // Whole accumulated gradients: every ReduceScatter in a step-end bucket (compared bucket by bucket below).
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = false;
  const Plan plain = PlanFor(run);
  run.parallel.micro_batch_interleaved = 2;
  const Plan interleaved = PlanFor(run);
  const StageProgram& a = plain.stages[0];
  const StageProgram& b = interleaved.stages[0];
  CHECK(b.forward.size() == 2 * a.forward.size());
  CHECK(b.backward.size() == 2 * a.backward.size());
  double flops_a = 0, flops_b = 0, bytes_a = 0, bytes_b = 0;
  int overlapped = 0;
  for (const Task& t : a.forward) (t.kind == Task::Kind::kCompute ? flops_a : bytes_a) += t.flops + t.comm_bytes;
  for (const Task& t : b.forward) {
    (t.kind == Task::Kind::kCompute ? flops_b : bytes_b) += t.flops + t.comm_bytes;
    overlapped += t.overlapped;
  }
  CHECK(flops_b == Approx(flops_a));  // the same work in two halves
  CHECK(bytes_b == Approx(bytes_a));
  CHECK(overlapped > 0);
  // Gradient buckets still become ready after the last slice's backward of their parameters.
  REQUIRE(b.buckets.size() == a.buckets.size());
  for (size_t i = 0; i < a.buckets.size(); ++i) CHECK(b.buckets[i].ready_after >= 2 * a.buckets[i].ready_after);
  const StepResult ra = Analytical(plain), rb = Analytical(interleaved);
  CHECK(rb.stages[0].exposed_communication_seconds < ra.stages[0].exposed_communication_seconds);
  CHECK(rb.step_seconds < ra.step_seconds);
}

TEST_CASE("micro_batch_interleaved must split the micro-batch evenly") {
  nlohmann::json doc = ReadJsonFile(testing::SourcePath("configs/runs/seed-ffn-ascend-8.json"));
  doc["parallel"]["micro_batch_interleaved"] = 3;
  CHECK_THROWS_WITH(ReadRunSpec(JsonNode(doc, testing::SourcePath("configs/runs/seed-ffn-ascend-8.json"))),
                    Catch::Contains("/parallel/micro_batch_interleaved") && Catch::Contains("3 interleaved slices"));
}

TEST_CASE("host-device training moves the host embedding's output over PCIe") {
  RunSpec run = Shipped("wide-deep-host-ascend-8");
  const Plan with_host = PlanFor(run);
  int transfers = 0;
  double pcie = 0;
  for (const Task& t : with_host.stages[0].forward)
    if (t.name.find("host_to_device") != std::string::npos) {
      ++transfers;
      pcie += t.seconds;
    }
  CHECK(transfers == 2);  // the wide and the deep lookups feed device operators
  CHECK(pcie > run.cluster.host.pcie_latency);
  run.model.params.Set("host_embedding", false);
  const Plan on_device = PlanFor(run);
  for (const Task& t : on_device.stages[0].forward) CHECK(t.name.find("host_to_device") == std::string::npos);
}

TEST_CASE("dataset inputs arrive as dataset_strategy and full_batch say") {
  RunSpec run = Shipped("seed-ffn-ascend-8");
  GraphBuilder b("g");
  const int x = b.Input("x", {32, 64}, DType::kFloat32);
  const int w = b.Parameter("w", {64, 64}, DType::kFloat32);
  b.MatMul("mm", x, w, false, false, Strategy{{1, 1}, {1, 8}});  // wants x whole on every device
  const Graph g = b.Finish();
  const ShardedGraph sharded{g, InferGraphLayouts(g, 8), {}};
  auto gathers = [&](const RunSpec& r) {
    int n = 0;
    const Plan plan = LowerToPlan(r, sharded);
    for (const Task& t : plan.stages[0].forward)
      n += t.kind == Task::Kind::kCollective && t.collective == Collective::kAllGather;
    return n;
  };
  run.parallel.dataset_strategy.kind = DatasetStrategy::Kind::kDataParallel;  // batch split over the 8 devices
  CHECK(gathers(run) == 1);
  run.parallel.dataset_strategy.kind = DatasetStrategy::Kind::kFullBatch;
  CHECK(gathers(run) == 0);
  run.parallel.dataset_strategy = {DatasetStrategy::Kind::kShard, {{4, 1}}};
  CHECK(gathers(run) == 1);
  run.parallel.dataset_strategy = {DatasetStrategy::Kind::kShard, {{4, 1, 1}}};
  CHECK_THROWS_WITH(gathers(run), Catch::Contains("has 3 entries but input \"x\" has 2 dimensions"));
  GraphBuilder small("small");
  small.Activation("ReLU", "relu", small.Input("y", {4, 8}, DType::kFloat32));
  const Graph sg = small.Finish();
  run.parallel.dataset_strategy.kind = DatasetStrategy::Kind::kDataParallel;
  CHECK_THROWS_WITH(LowerToPlan(run, ShardedGraph{sg, InferGraphLayouts(sg, 8), {}}),
                    Catch::Contains("a batch of 4 cannot be split over the 8 devices"));
}

// One transformer layer's activations for the backward, the difference of
// two depths (the embedding and the head cancel).
double LayerActivations(RunSpec run) {
  run.model.params.Set("layers", int64_t{1});
  const double one = PlanFor(run).stages[0].memory.activations_per_micro_batch;
  run.model.params.Set("layers", int64_t{2});
  return PlanFor(run).stages[0].memory.activations_per_micro_batch - one;
}

TEST_CASE("a transformer layer keeps the activations Korthikanti et al. count") {
  // BERT-large on 8 data-parallel devices: 32 sequences of 512 per device,
  // hidden 1024, 16 heads, fp16, dropout. Korthikanti et al. 2022, eq. 1:
  // 34 s b h + 5 a s^2 b bytes per layer (inputs of the GEMMs, norms, GeLU,
  // softmax output, the dropout masks; the residual adds keep nothing).
  RunSpec run = Shipped("bert-large-a100-8");
  run.parallel.comm_fusion = {};  // its split indices are past a two-layer model's gradients
  const double s = 512, b = 32, h = 1024, a = 16;
  const double korthikanti = 34 * s * b * h + 5 * a * s * s * b;
  CHECK(LayerActivations(run) == Approx(korthikanti).epsilon(0.005));
  // Flash attention keeps Q, K, V and its output instead of the s x s scores.
  run.model.params.Set("attention", std::string("flash"));
  CHECK(LayerActivations(run) == Approx(34 * s * b * h + 2 * s * b * h).epsilon(0.005));
}

TEST_CASE("a run that does not fit is out of memory with the peak and what dominates") {
  RunSpec run = Shipped("bert-large-a100-8");
  run.cluster.device.memory_bytes = 8e9;
  const Plan plan = PlanFor(run);
  const StepResult result = Analytical(plan);
  CHECK(result.out_of_memory);
  CHECK_THAT(result.memory_message, Catch::Contains("activations dominate"));
  CHECK_THAT(result.memory_message, Catch::Contains("but devices have 7.451 GiB"));
}

}  // namespace
}  // namespace shardlab

namespace shardlab {
namespace {

const Task* ForwardTaskOf(const Plan& plan, const Graph& graph, const std::string& type, const std::string& producer) {
  for (const Task& t : plan.stages[0].forward) {
    if (t.kind != Task::Kind::kCompute || t.op < 0) continue;
    const Operator& op = graph.op(t.op);
    if (op.type != type) continue;
    const int from = graph.tensor(op.inputs[0]).producer;
    if (from >= 0 && graph.op(from).type == producer) return &t;
  }
  return nullptr;
}

TEST_CASE("the megatron stack runs element-wise chains as one kernel and reshapes are views") {
  RunSpec mindspore = Shipped("bert-large-a100-8");
  RunSpec megatron = mindspore;
  megatron.stack = PresetStack(StackPreset::kMegatron);
  const PreparedRun a = Prepare(mindspore), b = Prepare(megatron);
  const Graph& graph = a.graph;
  // bias+GeLU: the GeLU reads the bias add's output from registers and launches nothing.
  const Task* unfused = ForwardTaskOf(a.plan, graph, "GeLU", "BiasAdd");
  const Task* fused = ForwardTaskOf(b.plan, graph, "GeLU", "BiasAdd");
  REQUIRE(unfused);
  REQUIRE(fused);
  CHECK(fused->bytes == Approx(unfused->bytes / 2));  // reads nothing of its input, writes its output
  CHECK(fused->kernel.fused);
  CHECK_FALSE(unfused->kernel.fused);
  CHECK(fused->seconds < unfused->seconds - 0.9 * mindspore.cluster.device.kernel_overhead);
  // MindSpore (the default) fuses nothing.
  CHECK(mindspore.stack == SoftwareStack{});
  const StepResult slow = Analytical(a.plan), fast = Analytical(b.plan);
  CHECK(fast.compute_seconds < 0.95 * slow.compute_seconds);
  // A Reshape moves no data in either stack.
  for (const Plan* plan : {&a.plan, &b.plan})
    for (const Task& t : plan->stages[0].forward)
      if (t.kind == Task::Kind::kCompute && t.op >= 0 && graph.op(t.op).type == "Reshape") CHECK(t.seconds == 0);
}

TEST_CASE("Megatron's splits of its fused products are views: no kernel, no traffic") {
  RunSpec run = Shipped("llama2-70b-h100-1024");
  run.model.params.Set("layers", int64_t{8});
  run.model.params.Set("qkv_concat", true);
  run.model.params.Set("ffn_concat", true);
  run.stack = PresetStack(StackPreset::kMegatron);
  CHECK(run.stack.split_views);
  const Plan views = PlanFor(run);
  run.stack.split_views = false;
  const Plan copies = PlanFor(run);
  auto split = [](const Plan& plan, const std::string& name, bool backward) -> const Task* {
    for (const StageProgram& stage : plan.stages)
      for (const Task& t : backward ? stage.backward : stage.forward)
        if (t.name == name) return &t;
    return nullptr;
  };
  for (const std::string op : {"layer1/attention/qkv_split", "layer1/ffn/gate_up_split"})
    for (const bool backward : {false, true}) {
      INFO(op << (backward ? " backward" : " forward"));
      const std::string name = op + (backward ? "/backward" : "/forward");
      const Task* view = split(views, name, backward);
      const Task* copy = split(copies, name, backward);
      REQUIRE(view);
      REQUIRE(copy);
      CHECK(view->bytes == 0);
      CHECK(view->seconds == 0);  // not even a launch
      CHECK(view->kernel.fused);
      // Copied out: the input read and the slices written (twice that backward).
      CHECK(copy->bytes > 0);
      CHECK(copy->seconds > 0);
    }
}

TEST_CASE("Megatron-Core's unfused cross entropy makes its float32 passes over the logits") {
  RunSpec run = Shipped("gpt3-175b-h100-4096");
  run.model.params.Set("layers", int64_t{16});
  run.model.params.Set("loss", std::string("vocab_parallel"));
  run.stack = PresetStack(StackPreset::kMegatron);
  CHECK_FALSE(run.stack.fuse_cross_entropy);
  const Plan unfused = PlanFor(run);
  run.stack.fuse_cross_entropy = true;
  const Plan fused = PlanFor(run);
  auto loss = [](const Plan& plan, bool backward) -> const Task* {
    const StageProgram& last = plan.stages.back();
    for (const Task& t : backward ? last.backward : last.forward)
      if (t.kind == Task::Kind::kCompute && t.name.find("cross_entropy/") != std::string::npos) return &t;
    return nullptr;
  };
  REQUIRE(loss(unfused, false));
  REQUIRE(loss(fused, false));
  // 36 bytes more per logit forward (the float32 copy and five passes), 10 backward (bfloat16 logits).
  const double elements = loss(fused, false)->bytes / 2;
  CHECK(loss(unfused, false)->bytes == Approx(loss(fused, false)->bytes + 36 * elements).epsilon(1e-3));
  CHECK(loss(unfused, true)->bytes == Approx(loss(fused, true)->bytes + 10 * elements).epsilon(1e-3));
  CHECK(loss(unfused, false)->seconds > 10 * loss(fused, false)->seconds);
}

TEST_CASE("a run's stack is a preset name or an object that overrides its keys") {
  testing::Doc name(R"("megatron")");
  CHECK(ReadSoftwareStack(name.root()) == PresetStack(StackPreset::kMegatron));
  testing::Doc object(R"({"preset": "megatron", "fuse_elementwise": false})");
  const SoftwareStack s = ReadSoftwareStack(object.root());
  CHECK(s.preset == StackPreset::kMegatron);
  CHECK_FALSE(s.fuse_elementwise);
  CHECK(s.split_views);
  CHECK_FALSE(PresetStack(StackPreset::kMindSpore).split_views);
  testing::Doc bad(R"({"preset": "deepspeed"})", "run.json");
  const ConfigError e = testing::ExpectConfigError([&] { ReadSoftwareStack(bad.root()); });
  CHECK(e.pointer() == "/preset");
  testing::Doc typo(R"({"preset": "megatron", "fuse_elementwis": true})", "run.json");
  CHECK(testing::ExpectConfigError([&] { ReadSoftwareStack(typo.root()); }).pointer() == "/fuse_elementwis");
  // Mixed precision: the presets differ; an object overrides either key.
  CHECK(PresetStack(StackPreset::kMegatron).master_weights);
  CHECK(PresetStack(StackPreset::kMegatron).gradient_buffer == GradientBuffer::kReduce);
  CHECK_FALSE(PresetStack(StackPreset::kMindSpore).master_weights);
  CHECK(PresetStack(StackPreset::kMindSpore).gradient_buffer == GradientBuffer::kParameter);
  testing::Doc mixed(
      R"({"preset": "mindspore", "master_weights": true, "gradient_buffer": "reduce", "overlap_param_gather": true})");
  const SoftwareStack m = ReadSoftwareStack(mixed.root());
  CHECK(m.master_weights);
  CHECK(m.gradient_buffer == GradientBuffer::kReduce);
  CHECK(m.overlap_param_gather);
  CHECK(ToJson(m)["gradient_buffer"] == "reduce");
  testing::Doc buffer(R"({"preset": "megatron", "gradient_buffer": "fp32"})", "run.json");
  const ConfigError b = testing::ExpectConfigError([&] { ReadSoftwareStack(buffer.root()); });
  CHECK(b.pointer() == "/gradient_buffer");
  // FP8 scaling: delayed by default, named values only.
  CHECK(PresetStack(StackPreset::kMegatron).fp8_scaling == Fp8Scaling::kDelayed);
  testing::Doc current(R"({"preset": "megatron", "fp8_scaling": "current"})");
  CHECK(ReadSoftwareStack(current.root()).fp8_scaling == Fp8Scaling::kCurrent);
  CHECK(ToJson(ReadSoftwareStack(current.root()))["fp8_scaling"] == "current");
  testing::Doc scaling(R"({"preset": "megatron", "fp8_scaling": "tensorwise"})", "run.json");
  const ConfigError f = testing::ExpectConfigError([&] { ReadSoftwareStack(scaling.root()); });
  CHECK(f.pointer() == "/fp8_scaling");
  CHECK(std::string(f.what()).find("current") != std::string::npos);
}

TEST_CASE("the stack's TP overlap hides tensor-parallel collectives behind the compute after them") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.stack = PresetStack(StackPreset::kMegatron);
  const Plan blocking = PlanFor(run);
  run.stack.overlap_tensor_parallel = true;
  const Plan overlapped = PlanFor(run);
  int tensor = 0;
  for (const Task& t : overlapped.stages[0].forward)
    if (t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kTensor) {
      ++tensor;
      CHECK(t.overlapped);
    }
  CHECK(tensor > 0);
  const StepResult a = Analytical(blocking), b = Analytical(overlapped);
  CHECK(b.step_seconds < 0.9 * a.step_seconds);
  // The compute beside them runs without the SMs Transformer Engine's
  // userbuffers hold (16 of 132 for a ReduceScatter, one for an AllGather's
  // ring exchange): longer, by less than a ReduceScatter beside all of it.
  CHECK(b.compute_seconds > a.compute_seconds);
  CHECK(b.compute_seconds < a.compute_seconds * 132 / 116);
  for (const Task& t : overlapped.stages[0].forward)
    if (t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kTensor)
      CHECK(t.compute_share == Approx((t.collective == Collective::kAllGather ? 1.0 : 16.0) / 132));
}

TEST_CASE("Megatron's distributed optimizer shards every parameter and MindSpore's only divisible ones") {
  // With a threshold above every parameter MindSpore shards none; Megatron's
  // flat buffer ignores thresholds and shapes and shards them all.
  RunSpec run = Shipped("gpt3-175b-h100-4096");
  run.model.params.Set("layers", int64_t{16});
  run.parallel.pipeline_stages = 16;
  RunSpec megatron = run;
  megatron.stack = PresetStack(StackPreset::kMegatron);
  megatron.stack.fuse_elementwise = false;
  run.parallel.parallel_optimizer_config.parallel_optimizer_threshold = 1 << 30;  // KiB: nothing is large enough
  const Plan mindspore = PlanFor(run), flat = PlanFor(megatron);
  CHECK(flat.stages[1].memory.optimizer_states < 0.1 * mindspore.stages[1].memory.optimizer_states);
}

TEST_CASE("mixed precision keeps what the stack keeps: a float32 master copy and the gradient buffer's dtype") {
  RunSpec run = Shipped("gpt3-175b-h100-4096");  // float16 parameters, 32 micro-batches, MindSpore's stack
  run.model.params.Set("layers", int64_t{16});
  const MemoryBreakdown mindspore = PlanFor(run).stages[1].memory;
  // MindSpore updates 16-bit parameters in place: Adam's two float32 moments
  // only (the few float32 parameters, LayerNorm's, need no copy either way).
  RunSpec master = run;
  master.stack.master_weights = true;
  CHECK(PlanFor(master).stages[1].memory.optimizer_states ==
        Approx(mindspore.optimizer_states * 12 / 8).epsilon(0.005));
  // MindSpore accumulates in clones of the parameters; Megatron's buffer has
  // the reduction's dtype: float32 under gradient_fp32_sync, else float16.
  RunSpec reduce = run;
  reduce.stack.gradient_buffer = GradientBuffer::kReduce;
  CHECK(PlanFor(reduce).stages[1].memory.gradients == Approx(2 * mindspore.gradients).epsilon(0.01));
  reduce.parallel.gradient_fp32_sync = false;
  CHECK(PlanFor(reduce).stages[1].memory.gradients == Approx(mindspore.gradients));
}

TEST_CASE("the stack's optimizer dtype sizes the moments and the master copy") {
  RunSpec run = Shipped("gpt3-175b-h100-4096");
  run.model.params.Set("layers", int64_t{16});
  run.stack.master_weights = true;  // 4 + 8 bytes per float16 element
  const MemoryBreakdown fp32 = PlanFor(run).stages[1].memory;
  run.stack.optimizer_dtype = DType::kBFloat16;  // 2 + 4 (NeMo's distributed_fused_adam with dtype bf16)
  CHECK(PlanFor(run).stages[1].memory.optimizer_states == Approx(fp32.optimizer_states / 2).epsilon(0.01));
}

TEST_CASE("fp8_param_gather keeps FP8 GEMMs' weights in FP8 and gathers them so") {
  RunSpec run = Shipped("gpt3-175b-h100-4096");
  run.model.params.Set("layers", int64_t{16});
  run.model.params.Set("fp8", std::string("hybrid"));
  run.stack = PresetStack(StackPreset::kMegatron);
  const Plan cast = PlanFor(run);
  run.stack.fp8_param_gather = true;
  const Plan fp8 = PlanFor(run);
  const MemoryBreakdown &a = cast.stages[1].memory, &b = fp8.stages[1].memory;
  // The layers' GEMM weights: float16 plus an FP8 copy (3 bytes) become FP8
  // (1 byte); the norms and biases stay float16. The optimizer's master copy
  // and moments do not change.
  CHECK(b.parameters < a.parameters / 2.9);
  CHECK(b.parameters > a.parameters / 3.1);
  CHECK(b.optimizer_states == Approx(a.optimizer_states));
  // The step-start weight gathers carry a byte per element.
  auto gathered = [](const StageProgram& s) {
    double bytes = 0;
    for (const Task& t : s.step_start) bytes += t.comm_bytes;
    return bytes;
  };
  CHECK(gathered(fp8.stages[1]) < 0.51 * gathered(cast.stages[1]));
}

TEST_CASE("an FP8 GEMM's passes launch their cast kernels: input forward, output gradient backward") {
  RunSpec run = Shipped("gpt3-175b-h100-4096");
  run.model.params.Set("layers", int64_t{16});
  run.model.params.Set("fp8", std::string("hybrid"));
  run.stack = PresetStack(StackPreset::kMegatron);
  auto find = [](const std::vector<Task>& tasks, const std::string& name) -> const Task* {
    for (const Task& t : tasks)
      if (t.name == name) return &t;
    return nullptr;
  };
  const std::string query = "layer5/attention/query", projection = "layer5/attention/projection";
  auto check = [&](const Plan& plan, double norm_input, double other_input, double gradient) {
    const auto holder = std::find_if(plan.stages.begin(), plan.stages.end(),
                                     [&](const StageProgram& s) { return find(s.forward, projection + "/forward"); });
    REQUIRE(holder != plan.stages.end());
    const StageProgram& stage = *holder;
    for (const std::string& gemm : {query, projection}) {
      INFO(gemm);
      const Task* forward = find(stage.forward, gemm + "/forward");
      const Task* backward = find(stage.backward, gemm + "/backward");
      const Task* cast = find(stage.forward, gemm + "/fp8_cast");
      const Task* grad_cast = find(stage.backward, gemm + "/grad_fp8_cast");
      REQUIRE(forward);
      REQUIRE(backward);
      REQUIRE(cast);
      REQUIRE(grad_cast);
      // Each runs just before its product, memory-bound, as its own kernel.
      CHECK(&cast[1] == forward);
      CHECK(&grad_cast[1] == backward);
      CHECK(cast->flops == 0);
      const GemmShape& g = forward->kernel.gemm;
      const double input = static_cast<double>(g.m * g.k * g.batch), output = static_cast<double>(g.m * g.n * g.batch);
      CHECK(cast->bytes == Approx((gemm == query ? norm_input : other_input) * input));
      CHECK(grad_cast->bytes == Approx(gradient * output));
      CHECK(cast->seconds > 0);
    }
  };
  // Delayed scaling: read 2 bytes, write the row- and column-wise FP8
  // copies; the query's input leaves its LayerNorm in FP8, so only
  // its column-wise copy is apart (1 byte more).
  check(PlanFor(run), 1, 4, 4);
  // Current scaling reads each tensor once more for its amax, the norm's output too.
  run.stack.fp8_scaling = Fp8Scaling::kCurrent;
  check(PlanFor(run), 6, 6, 6);
  run.stack.fp8_scaling = Fp8Scaling::kBlock;
  check(PlanFor(run), 1, 4, 4);
  // Without FP8 GEMMs there is nothing to cast.
  run.model.params.Set("fp8", std::string("off"));
  for (const StageProgram& stage : PlanFor(run).stages)
    for (const Task& t : stage.forward) CHECK(t.name.find("fp8_cast") == std::string::npos);
}

TEST_CASE("sequence parallelism gathers a norm's FP8 output in FP8, cast on the norm's own slice") {
  RunSpec run = Shipped("llama2-70b-h100-1024");  // TP 8 with sequence parallelism
  run.model.params.Set("layers", int64_t{8});
  run.stack = PresetStack(StackPreset::kMegatron);
  auto find = [](const Plan& plan, const std::string& name) -> const Task* {
    for (const Task& t : plan.stages[0].forward)
      if (t.name == name) return &t;
    return nullptr;
  };
  const Plan bf16 = PlanFor(run);
  run.model.params.Set("fp8", std::string("hybrid"));
  const Plan fp8 = PlanFor(run);
  for (const std::string gemm : {"layer1/attention/qkv", "layer1/ffn/gate_up"}) {
    INFO(gemm);
    const Task* a = find(bf16, gemm + "/redistribute.AllGather");
    const Task* b = find(fp8, gemm + "/redistribute.AllGather");
    const Task* cast = find(fp8, gemm + "/fp8_cast");
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(cast);
    // A byte per element on the wire instead of bf16's two.
    CHECK(b->comm_bytes == Approx(a->comm_bytes / 2));
    // The column-wise copy of the norm's own slice (what each device gathers
    // from), a byte per element: the gathered tensor is 8 times that.
    CHECK(cast->bytes == Approx(b->comm_bytes));
    CHECK(find(fp8, gemm + "/forward")->kernel.gemm.m * find(fp8, gemm + "/forward")->kernel.gemm.k ==
          Approx(8 * cast->bytes));
  }
  // The row-parallel projection's input is not a norm's: no gather, a whole cast.
  CHECK(find(fp8, "layer1/attention/projection/redistribute.AllGather") == nullptr);
}

TEST_CASE("packed documents run attention kernels over a document's keys") {
  RunSpec run = Shipped("llama2-70b-h100-1024");
  run.model.params.Set("layers", int64_t{8});
  auto attention = [](const Plan& plan) -> const Task* {
    for (const Task& t : plan.stages[0].forward)
      if (!t.kernel.attention.empty()) return &t;
    return nullptr;
  };
  const Plan whole = PlanFor(run);
  run.model.params.Set("document_length", int64_t{512});
  const Plan packed = PlanFor(run);
  const Task *a = attention(whole), *b = attention(packed);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->kernel.attention.kv_length == 4096);
  CHECK(b->kernel.attention.kv_length == 512);
  CHECK(b->flops == Approx(a->flops / 8));
  // An eighth of the work, at a short kernel's lower efficiency.
  CHECK(b->seconds < a->seconds);
  CHECK(b->seconds > a->seconds / 8);
}

// Every part of a stage's memory added up.
double SumOfParts(const MemoryBreakdown& m) {
  return m.parameters + m.gradients + m.optimizer_states + m.activations + m.communication_buffers;
}

TEST_CASE("gradients kept in no buffer peak apart from the activations they replace") {
  RunSpec run = Shipped("gpt3-175b-h100-4096");
  run.model.params.Set("layers", int64_t{16});
  run.parallel.micro_batch_num = 16;  // as few as the pipeline allows: the buffer persists
  const MemoryBreakdown kept = PlanFor(run).stages[1].memory;
  CHECK(kept.peak == Approx(SumOfParts(kept)));
  run.parallel.pipeline_stages = 1;
  run.parallel.micro_batch_num = 1;  // one micro-batch: gradients come as the backward frees activations
  const MemoryBreakdown transient = PlanFor(run).stages[0].memory;
  REQUIRE(transient.gradients > 0);
  REQUIRE(transient.activations > 0);
  // The parallel optimizer stores a weight as its shard (1/32 here, where 32
  // divides its first dimension); the gathered rest is freed by the backward
  // as it reads it for the last time.
  CHECK(transient.gathered_weights > 0.8 * transient.parameters);
  CHECK(transient.gathered_weights < transient.parameters * 31 / 32 + 1);
  const double owned = transient.parameters - transient.gathered_weights;
  CHECK(transient.peak == Approx(owned + transient.optimizer_states +
                                 std::max(transient.gradients, transient.gathered_weights + transient.activations) +
                                 transient.communication_buffers));
  CHECK(transient.peak <
        transient.parameters + transient.optimizer_states + std::max(transient.gradients, transient.activations));
  run.stack.gradient_buffer = GradientBuffer::kReduce;  // Megatron's buffer lives through the step
  run.stack.flat_optimizer_sharding = true;             // and its weights in the persistent parameter buffer
  const MemoryBreakdown buffered = PlanFor(run).stages[0].memory;
  CHECK(buffered.gathered_weights == 0);
  CHECK(buffered.peak == Approx(SumOfParts(buffered)));
}

TEST_CASE("Megatron's overlapped gradient reduction runs buckets of 40M elements during the backward") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.stack = PresetStack(StackPreset::kMegatron);
  const Plan one = PlanFor(run);
  run.stack.overlap_grad_reduce = true;
  const Plan bucketed = PlanFor(run);
  const auto& buckets = bucketed.stages[1].buckets;
  REQUIRE(buckets.size() > one.stages[1].buckets.size() + 4);  // one bucket per fusion list without it
  // Every list's buckets but its last hold at least max(40M, 1M x 32)
  // elements (fp32 or bf16 on the wire: at least 80 MB).
  for (size_t b = 0; b + 1 < buckets.size(); ++b)
    if (buckets[b].list == buckets[b + 1].list) CHECK(buckets[b].bytes >= 80e6);
  const StepResult a = Analytical(one), b = Analytical(bucketed);
  CHECK(b.step_seconds < a.step_seconds);
}

TEST_CASE("Megatron's overlapped parameter gathers let the first forward start before they end") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.stack = PresetStack(StackPreset::kMegatron);
  run.stack.overlap_grad_reduce = true;  // buckets: one gather per bucket
  const Plan waiting = PlanFor(run);
  run.stack.overlap_param_gather = true;
  const Plan overlapped = PlanFor(run);
  const StageProgram& w = waiting.stages[1];
  const StageProgram& o = overlapped.stages[1];
  REQUIRE(o.step_start.size() == w.step_start.size());
  REQUIRE(o.step_start.size() > 4);
  double gathers = 0;
  for (const Task& t : w.step_start) {
    CHECK(t.lead_seconds == 0);
    gathers += t.seconds;
  }
  CHECK(w.FirstForwardStart() == Approx(gathers));
  // In the order the forward uses the weights, the first at once.
  CHECK(o.step_start.front().lead_seconds == 0);
  for (size_t i = 1; i < o.step_start.size(); ++i)
    CHECK(o.step_start[i].lead_seconds >= o.step_start[i - 1].lead_seconds);
  CHECK(o.step_start.back().lead_seconds > 0);
  // The forward waits at least for the first gather and for whatever the
  // forward before the last one's weights cannot hide, less than for all.
  CHECK(o.FirstForwardStart() >= o.step_start.front().seconds);
  CHECK(o.FirstForwardStart() >= gathers - o.step_start.back().lead_seconds - 1e-12);
  CHECK(o.FirstForwardStart() < gathers);
  const StepResult a = Analytical(waiting), b = Analytical(overlapped);
  CHECK(b.step_seconds < a.step_seconds);
  // Only the part of the gathers that holds the forward back is exposed, so
  // the stage's compute, exposed communication and bubbles still make its step.
  const StageResult& sa = a.stages[1];
  const StageResult& sb = b.stages[1];
  CHECK(sa.exposed_communication_seconds - sb.exposed_communication_seconds ==
        Approx(gathers - o.FirstForwardStart()).epsilon(0.01));
  for (const StepResult* r : {&a, &b}) {
    const StageResult& slowest = r->stages[static_cast<size_t>(r->slowest_stage)];
    CHECK(slowest.compute_seconds + slowest.exposed_communication_seconds + slowest.bubble_seconds ==
          Approx(r->step_seconds).epsilon(0.01));
  }
}

TEST_CASE("the search and the GUI price an operator as lowering prices its compute tasks") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.model.params.Set("fp8", std::string("hybrid"));  // FP8 GEMMs: each pass at its own dtype
  const PreparedRun p = Prepare(run);
  int gemms = 0;
  for (const Task& t : p.plan.stages[1].forward) {
    if (t.kind != Task::Kind::kCompute || t.op < 0 || t.kernel.fused || t.kernel.gemm.empty()) continue;
    const Operator& op = p.sharded.graph.op(t.op);
    const OpLayout& layout = p.sharded.layouts[t.op];
    CHECK(OperatorComputeSeconds(p.sharded.graph, op, layout, run.cluster, false) == Approx(t.seconds));
    ++gemms;
  }
  CHECK(gemms > 10);
  // A GEMM's shape matters: one column more than the alignment costs more than its FLOPs.
  const GemmShape aligned{4096, 4096, 4096}, ragged{4096, 4100, 4096};
  const DeviceSpec& h100 = run.cluster.device;
  CHECK(GemmEfficiency(h100, ragged, DType::kBFloat16, false) <
        0.9 * GemmEfficiency(h100, aligned, DType::kBFloat16, false));
}

TEST_CASE("an FP8 GEMM keeps its activation operand as a byte per element") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.parallel.recompute = false;
  const double bf16 = PlanFor(run).stages[1].memory.activations_per_micro_batch;
  run.model.params.Set("fp8", std::string("hybrid"));
  const double fp8 = PlanFor(run).stages[1].memory.activations_per_micro_batch;
  // The GEMM inputs (the norms' outputs, the attention output, the SwiGLU
  // product) are a large part of a layer's activations; halved, not all.
  CHECK(fp8 < 0.9 * bf16);
  CHECK(fp8 > 0.6 * bf16);
}

}  // namespace
}  // namespace shardlab
