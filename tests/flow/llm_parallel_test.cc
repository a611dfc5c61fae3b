// The LLaMA building blocks and sequence parallelism through the whole flow
// (run -> strategies -> plan -> analytical step) on the shipped LLaMA-2 70B
// run: each toggle moves communication, memory and the step the way its
// formula says.
#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/cost/compute_cost.h"
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
  // They are sequence parallelism's: reported as the `sequence` dimension, the AllReduces as `tensor`.
  for (const auto* pass : {&a.forward, &a.backward, &b.forward, &b.backward})
    for (const Task& t : *pass) {
      if (t.kind != Task::Kind::kCollective) continue;
      INFO(t.name);
      const bool sp_exchange = t.collective == Collective::kAllGather || t.collective == Collective::kReduceScatter;
      CHECK(t.dimension == (sp_exchange ? CommDimension::kSequence : CommDimension::kTensor));
    }
  // Full recompute keeps each layer's input, now split over the 8 tensor-parallel devices too.
  CHECK(a.memory.activations_per_micro_batch == Approx(b.memory.activations_per_micro_batch / 8).epsilon(0.01));
  // The norms and residuals no longer run 8 times over: less compute, a shorter step.
  const StepResult fast = Summarize(with.plan, RunAnalytical(with.plan));
  const StepResult slow = Summarize(without.plan, RunAnalytical(without.plan));
  CHECK(fast.step_seconds < slow.step_seconds);
  CHECK(fast.compute_seconds < slow.compute_seconds);
  // The report splits them apart: on this middle stage the blocks' exchanges are all the sequence
  // dimension's, the tensor dimension carries nothing.
  auto bytes = [](const StepResult& r, CommDimension dim) {
    for (const DimensionCommunication& c : r.stages[1].communication)
      if (c.dimension == dim) return c.bytes;
    return -1.0;
  };
  CHECK(bytes(slow, CommDimension::kSequence) == 0);
  CHECK(bytes(fast, CommDimension::kSequence) > 0);
  CHECK(bytes(fast, CommDimension::kTensor) < 0.01 * bytes(slow, CommDimension::kTensor));
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

TEST_CASE("grouped-query heads must divide model_parallel") {
  RunSpec run = Llama70b();
  run.model.params.Set("kv_heads", int64_t{4});
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("kv_heads 4 cannot be split over model_parallel 8"));
}

TEST_CASE("eager grouped-query attention repeats each key and value head over its group without communication") {
  RunSpec gqa = Llama70b();
  gqa.model.params.Set("attention", std::string("eager"));
  RunSpec mha = gqa;
  mha.model.params.Set("kv_heads", int64_t{64});
  const PreparedRun g = Prepare(gqa), m = Prepare(mha);
  const StageProgram &x = g.plan.stages[1], &y = m.plan.stages[1];
  // The repeat copies 8 heads' keys and values to 64 on each device, split
  // by model_parallel as the heads are: no collective more than without it.
  int repeats = 0;
  for (const Task& t : x.forward)
    if (t.name.find("_repeat/") != std::string::npos && !t.recompute) ++repeats;
  CHECK(repeats == 2 * 20);  // keys and values, 20 layers per stage
  CHECK(x.forward.size() > y.forward.size());
  auto collectives = [](const std::vector<Task>& tasks) {
    int n = 0;
    for (const Task& t : tasks) n += t.kind == Task::Kind::kCollective;
    return n;
  };
  CHECK(collectives(x.forward) == collectives(y.forward));
  CHECK(collectives(x.backward) == collectives(y.backward));
  // The score and context products see all 64 heads: the same attention FLOPs as without grouping.
  double scores_g = 0, scores_m = 0;
  for (const Task& t : x.forward)
    if (t.name == "layer20/attention/scores/forward") scores_g = t.flops;
  for (const Task& t : y.forward)
    if (t.name == "layer20/attention/scores/forward") scores_m = t.flops;
  CHECK(scores_g > 0);
  CHECK(scores_g == scores_m);
  // Fewer projection weights all the same.
  CHECK(x.memory.parameters < y.memory.parameters);
}

const Task& TaskNamed(const std::vector<Task>& tasks, const std::string& name) {
  for (const Task& t : tasks)
    if (t.name == name) return t;
  FAIL("no task " << name);
  return tasks.front();
}

TEST_CASE("fp8 hybrid runs the linear layers at the FP8 peak with E5M2 gradients and keeps FP8 weight copies") {
  RunSpec bf16 = Llama70b();
  RunSpec fp8 = bf16;
  fp8.model.params.Set("fp8", std::string("hybrid"));
  const PreparedRun a = Prepare(bf16), b = Prepare(fp8);
  const StageProgram &x = a.plan.stages[1], &y = b.plan.stages[1];
  const std::string qkv = "layer20/attention/qkv";
  CHECK(TaskNamed(y.forward, qkv + "/forward").dtype == DType::kFloat8E4M3);
  CHECK(TaskNamed(y.backward, qkv + "/backward").dtype == DType::kFloat8E5M2);
  const DType model_dtype = *ParseDType(bf16.model.params.String("dtype"));  // float16, as the checkpoint
  CHECK(TaskNamed(x.forward, qkv + "/forward").dtype == model_dtype);
  // Twice the peak at FP8's own efficiency (0.70 against 0.87 on the H100,
  // measured): the GEMM takes 0.62 of the time, less the fixed kernel overhead.
  const DeviceSpec& device = bf16.cluster.device;
  const Task& fp8_qkv = TaskNamed(y.forward, qkv + "/forward");
  const double rate16 =
      PeakFlops(device, model_dtype) * GemmEfficiency(device, fp8_qkv.kernel.gemm, model_dtype, false);
  const double rate8 =
      PeakFlops(device, DType::kFloat8E4M3) * GemmEfficiency(device, fp8_qkv.kernel.gemm, DType::kFloat8E4M3, false);
  CHECK(rate8 / rate16 == Approx(2 * 0.70 / 0.87).epsilon(0.01));
  const double overhead = device.kernel_overhead;
  CHECK((fp8_qkv.seconds - overhead) ==
        Approx((TaskNamed(x.forward, qkv + "/forward").seconds - overhead) * rate16 / rate8).epsilon(0.01));
  // The attention core stays in the model's dtype.
  CHECK(TaskNamed(y.forward, "layer20/attention/flash/forward").dtype == model_dtype);
  // One byte more per linear weight element: the FP8 copy.
  const double hidden = 8192, kv = 8 * 128, ffn = 28672, layers = 20, tp = 8;
  const double linear = layers * (hidden * (hidden + 2 * kv) + hidden * hidden + 3 * hidden * ffn) / tp;
  CHECK(y.memory.parameters - x.memory.parameters == Approx(linear).epsilon(1e-6));
  const StepResult slow = Summarize(a.plan, RunAnalytical(a.plan)), fast = Summarize(b.plan, RunAnalytical(b.plan));
  CHECK(fast.compute_seconds < 0.8 * slow.compute_seconds);  // attention and element-wise work stay
  CHECK(fast.step_seconds < slow.step_seconds);
}

TEST_CASE("fp8 needs a device with an FP8 peak") {
  testing::Doc doc(R"({"name": "r", "cluster": ")" + testing::SourcePath("configs/clusters/dgx-a100-hdr.json") +
                   R"(", "model": ")" + testing::SourcePath("configs/models/hf/Llama-2-7b-hf/config.json") +
                   R"(", "model_params": {"fp8": "e4m3"}, "parallel": {"global_batch_size": 8}})");
  const ConfigError e = testing::ExpectConfigError([&] { ReadRunSpec(doc.root()); });
  CHECK(e.pointer() == "/model_params/fp8");
  CHECK_THAT(e.what(), Catch::Contains("no peak_flops for float8_e4m3fn"));
}

TEST_CASE("force_fp32_communication doubles the bytes of 16-bit reductions and leaves gathers alone") {
  RunSpec run = Llama70b();
  const PreparedRun plain = Prepare(run);
  run.parallel.force_fp32_communication = true;
  const PreparedRun fp32 = Prepare(run);
  const std::string rs = "layer20/attention/projection/ReduceScatter";
  CHECK(TaskNamed(fp32.plan.stages[1].forward, rs).comm_bytes ==
        2 * TaskNamed(plain.plan.stages[1].forward, rs).comm_bytes);
  const std::string ag = "layer20/attention/qkv/redistribute.AllGather";
  CHECK(TaskNamed(fp32.plan.stages[1].forward, ag).comm_bytes ==
        TaskNamed(plain.plan.stages[1].forward, ag).comm_bytes);
  CHECK(Summarize(fp32.plan, RunAnalytical(fp32.plan)).step_seconds >
        Summarize(plain.plan, RunAnalytical(plain.plan)).step_seconds);
}

TEST_CASE("the interleaved schedule holds more micro-batches of activations in flight than 1F1B") {
  RunSpec run = Llama70b();  // 4 stages, 32 micro-batches, 20 layers per stage
  const PreparedRun plain = Prepare(run);
  run.simulation.pipeline_schedule = PipelineSchedule::kInterleaved;
  run.simulation.virtual_pipeline_chunks = 2;
  const PreparedRun interleaved = Prepare(run);
  for (int64_t s = 0; s < 4; ++s) {
    const MemoryBreakdown &a = plain.plan.stages[s].memory, &b = interleaved.plan.stages[s].memory;
    CHECK(a.micro_batches_in_flight == 4 - s);
    // Megatron's warm-up (S - s - 1) * 2 + (v - 1) * S chunk-forwards, plus one, each half a stage.
    CHECK(b.micro_batches_in_flight == Approx(((4 - s - 1) * 2 + 4 + 1) / 2.0));
    CHECK(b.activations > a.activations);
  }
}

TEST_CASE("each chunk's forwards in flight hold their own chunk's activations") {
  RunSpec run = Llama70b();
  run.simulation.pipeline_schedule = PipelineSchedule::kInterleaved;
  run.simulation.virtual_pipeline_chunks = 2;
  run.parallel.select_recompute = false;  // every activation kept: nothing rematerialised besides
  run.parallel.recompute = false;
  const Plan plan = Prepare(run).plan;
  // A middle stage's two chunks keep about alike (10 layers each): half a micro-batch per chunk-forward.
  const MemoryBreakdown& middle = plan.stages[1].memory;
  CHECK(middle.activations ==
        Approx(middle.micro_batches_in_flight * middle.activations_per_micro_batch).epsilon(0.03));
}

TEST_CASE("zero_bubble_v's first stage holds its cool-down weight-gradient inputs to the end") {
  // Under zero_bubble_v stage 0 runs every cool-down weight-gradient pass at
  // the end (MindSpore's ZeroBubbleV offset of pipeline_stages - 1 there), so
  // its peak comes when all 16 wait, each holding its GEMMs' inputs and
  // output gradients: over three times what stage 1 holds (which runs one
  // before each cool-down backward), with few forwards then in flight.
  const Plan v = Prepare(LoadRunFile(testing::SourcePath("configs/runs/deepseek-v3-h800-2048.json"))).plan;
  const MemoryBreakdown& first = v.stages[0].memory;
  CHECK(first.held_for_weight_gradients > 3 * v.stages[1].memory.held_for_weight_gradients);
  CHECK(first.activations - first.held_for_weight_gradients <
        0.2 * first.micro_batches_in_flight * first.activations_per_micro_batch);
}

TEST_CASE("zbv_offset splits fewer of zero_bubble_v's backwards, which then hold less for weight gradients") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/deepseek-v3-h800-2048.json"));
  const PreparedRun base = Prepare(run);
  run.simulation.zbv_offset = 2;
  const PreparedRun fewer = Relower(base, run);
  // MindSpore's ZBV_offset 2: every stage splits two fewer of chunk 0's last
  // backwards (and stage 0, which defers all of its cool-down weight-gradient
  // passes to the end, holds two fewer of them at its peak).
  for (int64_t s : {0, 8, 15}) {
    INFO("stage " << s);
    CHECK(fewer.plan.stages[s].memory.held_for_weight_gradients < base.plan.stages[s].memory.held_for_weight_gradients);
  }
  const StepResult a = Summarize(base.plan, RunAnalytical(base.plan));
  const StepResult b = Summarize(fewer.plan, RunAnalytical(fewer.plan));
  // The deferred passes fill the same bubbles: the step stays within 0.1%.
  CHECK(b.step_seconds == Approx(a.step_seconds).epsilon(1e-3));
}

TEST_CASE("zero_bubble_v runs the model's end on stage 0, where its V comes back") {
  RunSpec run = Llama70b();
  auto stage_of = [](const Graph& graph, const std::string& name) {
    for (const Operator& op : graph.operators())
      if (op.name == name) return op.pipeline_stage;
    return int64_t{-1};
  };
  const PreparedRun one_f_one_b = Prepare(run);
  CHECK(stage_of(one_f_one_b.graph, "head/logits") == 3);
  CHECK(stage_of(one_f_one_b.graph, "final_norm") == 3);
  run.simulation.pipeline_schedule = PipelineSchedule::kZeroBubbleV;
  run.simulation.virtual_pipeline_chunks = 2;
  const PreparedRun v = Prepare(run);
  CHECK(stage_of(v.graph, "head/logits") == 0);
  CHECK(stage_of(v.graph, "final_norm") == 0);
  CHECK(stage_of(v.graph, "embedding/word") == 0);
  // The head's weights move from the last stage to the first; the layers stay where they were.
  const double head = v.plan.stages[0].memory.parameters - one_f_one_b.plan.stages[0].memory.parameters;
  CHECK(head > 0);
  CHECK(one_f_one_b.plan.stages[3].memory.parameters - v.plan.stages[3].memory.parameters == Approx(head));
  CHECK(v.plan.stages[1].memory.parameters == one_f_one_b.plan.stages[1].memory.parameters);
  // Its forward is in the stage's last chunk, the V's last arm.
  CHECK(v.plan.stages[0].forward.back().name.find("loss") != std::string::npos);
}

TEST_CASE("select_recompute drops the eager attention core's [seq, seq] tensors and recomputes only them") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/gpt3-175b-ascend-4096.json"));
  run.parallel.recompute = false;
  const PreparedRun none = Prepare(run);
  run.parallel.select_recompute = true;
  const PreparedRun select = Prepare(run);
  run.parallel.recompute = true;
  const PreparedRun full = Prepare(run);
  // Per layer, what the core's backwards read: the softmax output, the
  // dropout mask (a byte) and the dropout output, 5 bytes per element of
  // [2 samples, 96 / 8 heads, 2048, 2048] (Korthikanti et al.'s 5 a s^2 b);
  // 96 layers over 16 stages.
  const double core = 5 * 2 * 12 * 2048.0 * 2048;
  const MemoryBreakdown &a = none.plan.stages[1].memory, &b = select.plan.stages[1].memory;
  CHECK(a.activations_per_micro_batch - b.activations_per_micro_batch == Approx(6 * core));
  const double plain = Summarize(none.plan, RunAnalytical(none.plan)).step_seconds;
  const double selective = Summarize(select.plan, RunAnalytical(select.plan)).step_seconds;
  const double everything = Summarize(full.plan, RunAnalytical(full.plan)).step_seconds;
  CHECK(plain < selective);
  CHECK(selective < everything);
}

}  // namespace
}  // namespace shardlab

namespace shardlab {
namespace {

TEST_CASE("a fused SwiGLU keeps what it read, not its SiLU output") {
  // Megatron's fused SwiGLU saves its input and recomputes SiLU(gate) in
  // backward; unfused, the product keeps SiLU(gate) as its operand.
  RunSpec fused = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  fused.parallel.recompute = false;
  fused.stack = PresetStack(StackPreset::kMegatron);
  REQUIRE(fused.stack.fuse_elementwise);
  RunSpec unfused = fused;
  unfused.stack.fuse_elementwise = false;
  const PreparedRun a = Prepare(fused), b = Prepare(unfused);
  // Stage 1: 20 layers, each SiLU output 4096 tokens x 28672 / 8 bf16 values.
  const double silu = 4096.0 * 28672 / 8 * 2;
  CHECK(b.plan.stages[1].memory.activations_per_micro_batch - a.plan.stages[1].memory.activations_per_micro_batch ==
        Approx(20 * silu));
}

}  // namespace
}  // namespace shardlab
