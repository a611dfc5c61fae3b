// Sequence pipelining (MindSpore's seqpipe, MindFormers' seq_split_num)
// through the whole flow on the shipped Qwen2.5-72B 32K-token run: each
// micro-batch's sequences run as seq_split_num passes over their chunks, a
// chunk's attention reading the whole sequence's keys and values from a
// cache; the same work in smaller passes holds fewer activations, while a
// sequence's last chunks, which read the most keys, stall the pipeline.
#include <map>

#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/plan/stage_passes.h"
#include "core/report/graph_summary.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

// Qwen2.5-72B on 64 Ascend 910B (TP 8 with sequence parallelism, PP 8,
// 32 micro-batches of one 32,768-token sequence), seqpipe with `chunks`.
RunSpec Qwen72b(int64_t chunks) {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/qwen2.5-72b-32k-ascend-64.json"));
  run.model.params.Set("seq_split_num", chunks);
  return run;
}

const Operator& Op(const Graph& graph, const std::string& name) {
  const auto index = graph.FindOperator(name);
  REQUIRE(index);
  return graph.op(*index);
}

TEST_CASE("seq_split_num runs each micro-batch as passes over its sequence's chunks, attention reading it whole") {
  const PreparedRun whole = Prepare(Qwen72b(1)), split = Prepare(Qwen72b(8));
  CHECK(whole.plan.micro_batches == 32);
  CHECK(split.plan.micro_batches == 32 * 8);
  CHECK(split.plan.seq_chunks == 8);
  const Graph& g = split.sharded.graph;
  // A pass holds 4096 of the sequence's tokens; its attention's queries are
  // those, its keys and values the whole 32,768 (BNSD).
  const Operator& flash = Op(g, "layer0/attention/flash");
  CHECK(g.tensor(flash.inputs[0]).shape == Shape{1, 64, 4096, 128});
  CHECK(g.tensor(flash.inputs[1]).shape == Shape{1, 8, 32768, 128});
  CHECK(g.tensor(flash.inputs[2]).shape == Shape{1, 8, 32768, 128});
  // Each layer's cache: the sequence's keys (and values) so far, not trained.
  const auto cache = g.FindTensor("layer0/attention/key_cache");
  REQUIRE(cache);
  CHECK(g.tensor(*cache).shape == Shape{1, 8, 32768, 128});
  CHECK_FALSE(g.tensor(*cache).requires_grad);
  // The same model FLOPs per step (Megatron's count: every query-key pair,
  // 4096 x 32768 per pass x 8 passes = 32768^2), within the cache's element-wise work.
  CHECK(split.plan.model_flops == Approx(whole.plan.model_flops).epsilon(0.002));
  CHECK(split.plan.tokens_per_step == whole.plan.tokens_per_step);
  // The graph's summary (`shardlab graph`) counts a sequence's passes: the
  // FLOPs per sample are the whole sequence's, 8 chunk passes of one eighth.
  const GraphSummary one_pass = SummarizeGraph(g, 1);
  const GraphSummary passes = SummarizeGraph(g, 1, 8);
  CHECK(passes.seq_chunks == 8);
  CHECK(passes.forward_flops == 8 * one_pass.forward_flops);
  CHECK(passes.forward_flops == Approx(SummarizeGraph(whole.sharded.graph, 1).forward_flops).epsilon(0.01));
  CHECK_THAT(FormatGraphSummary(passes), Catch::Contains("(the graph is one of each sequence's 8 chunk passes"));

  // Stage 0 warms up (S - 1) + n - 1 passes ahead of its first backward and
  // holds one more: 15 chunks of 8, 1.875 micro-batches, against 1F1B's 8.
  const MemoryBreakdown& one = whole.plan.stages[0].memory;
  const MemoryBreakdown& eight = split.plan.stages[0].memory;
  CHECK(one.micro_batches_in_flight == 8);
  CHECK(eight.micro_batches_in_flight == Approx(15.0 / 8));
  // A micro-batch's activations gain what each chunk keeps of its whole-
  // length keys and values (for the attention's backward and for placing
  // them: 4 tensors of 32768 x 128 bf16 on this device's one key/value
  // head), less the whole sequence's two that one pass kept: 10 layers x
  // (8 x 4 - 2) x 8 MiB.
  CHECK(eight.activations_per_micro_batch - one.activations_per_micro_batch ==
        Approx(10 * (8 * 4 - 2) * 8.0 * (1 << 20)).epsilon(0.01));
  CHECK(eight.activations < one.activations / 3);
  CHECK(one.peak > 64.0 * (1 << 30));    // 1F1B does not fit the 910B's 64 GB
  CHECK(eight.peak < 56.0 * (1 << 30));  // the run's max_device_memory
}

// The compute of `item`'s pass on stage 0.
double PassCompute(const StagePasses& passes, const ScheduleItem& item) {
  double seconds = 0;
  for (const PassStep& step : passes.Steps(item)) seconds += step.compute_seconds;
  return seconds;
}

TEST_CASE("a sequence's later chunks cost more, and the last one's round trip stalls the first stage") {
  const Plan plan = Prepare(Qwen72b(8)).plan;
  const StageProgram& stage = plan.stages[0];
  const StagePasses passes(stage, 1, 8, {});
  // Chunk j's attention reads j + 1/2 chunks of keys (causal): each chunk's
  // passes take longer than the one before, by the same attention step.
  std::vector<double> forward, backward;
  for (int64_t j = 0; j < 8; ++j) {
    forward.push_back(PassCompute(passes, {true, j, 0}));
    backward.push_back(PassCompute(passes, {false, j, 0}));
  }
  for (int64_t j = 1; j < 8; ++j) {
    CHECK(forward[j] > forward[j - 1]);
    CHECK(backward[j] > backward[j - 1]);
    CHECK(forward[j] - forward[j - 1] == Approx(forward[1] - forward[0]).epsilon(0.1));
  }
  double forward_mean = 0;
  for (double f : forward) forward_mean += f / 8;
  double mean_tasks = 0;
  for (const Task& t : stage.forward) mean_tasks += t.kind == Task::Kind::kCompute ? t.seconds : 0.0;
  CHECK(forward_mean == Approx(mean_tasks).epsilon(0.03));
  // MindSpore's order runs B(m, 7) on stage 0 after F(m + 1, 0..6) and
  // B(m - 1, 6..0) of lighter chunks: while those run, F(m, 7) crosses the 7
  // stages after it and B(m, 7) comes back. The first stage waits the
  // difference each micro-batch: 7 x ((F7 + B7) - mean over j < 7 of (Fj + Bj)).
  double lighter = 0;
  for (int64_t j = 0; j < 7; ++j) lighter += (forward[j] + backward[j]) / 7;
  const double stall = 7 * (forward[7] + backward[7] - lighter);
  const Trace trace = RunAnalytical(plan);
  const TraceEvent *before = nullptr, *last_chunk = nullptr;
  for (const TraceEvent& e : trace.events) {
    if (e.stage != 0 || e.lane != Lane::kCompute || (e.kind != EventKind::kForward && e.kind != EventKind::kBackward))
      continue;
    if (e.name == "B10s7") last_chunk = &e;
    if (e.name == "F11s6") before = &e;
  }
  REQUIRE(before);
  REQUIRE(last_chunk);
  CHECK(last_chunk->start - before->end() == Approx(stall).epsilon(0.05));
}

TEST_CASE("gradients reduced every micro-batch go once per micro-batch, after its sequence's first chunk") {
  RunSpec run = Qwen72b(8);  // on twice the devices, data parallel 2, so that the optimizer shards
  run.model.params.Set("data_parallel", int64_t{2});
  run.parallel.device_num = 128;
  run.parallel.global_batch_size = 64;
  run.model.params.Set("batch", int64_t{2});
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = true;  // reduce-scatter each micro-batch
  const Plan plan = Prepare(run).plan;
  int every = 0;  // the sharded weights' buckets (the norms stay whole: parallel_optimizer_threshold)
  for (const GradientBucket& b : plan.stages[0].buckets) every += b.every_micro_batch;
  REQUIRE(every > 0);
  const Trace trace = RunAnalytical(plan);
  std::map<int64_t, int> per_micro_batch;
  std::map<int64_t, double> last_chunk_end;  // of each micro-batch's sequence-chunk-0 backward
  for (const TraceEvent& e : trace.events) {
    if (e.stage != 0) continue;
    if (e.kind == EventKind::kGradient && e.micro_batch >= 0) ++per_micro_batch[e.micro_batch];
    if (e.kind == EventKind::kBackward && e.seq_chunk == 0) last_chunk_end[e.micro_batch] = e.end();
  }
  CHECK(per_micro_batch.size() == 32);
  for (const auto& [m, count] : per_micro_batch) CHECK(count == every);
  for (const TraceEvent& e : trace.events)
    if (e.stage == 0 && e.kind == EventKind::kGradient && e.micro_batch >= 0)
      CHECK(e.start >= last_chunk_end.at(e.micro_batch) - 1e-9);
}

TEST_CASE("a seqvpp order whose stages would wait on one another is refused before it runs") {
  RunSpec run = Qwen72b(3);
  run.model.params.Set("seq_length", int64_t{3 * 4096});
  run.simulation.pipeline_schedule = PipelineSchedule::kSeqVpp;
  run.simulation.virtual_pipeline_chunks = 2;
  run.model.params.Set("layers", int64_t{16});
  run.parallel.pipeline_stages = 5;
  run.parallel.device_num = 40;
  run.parallel.micro_batch_num = 3;
  run.parallel.global_batch_size = 3;
  run.model.params.Set("batch", int64_t{1});
  const ConfigError e = testing::ExpectConfigError([&] { Prepare(run); });
  CHECK_THAT(e.what(), Catch::Contains("deadlocks with 5 stages, 3 micro-batches, 2 chunks and seq_split_num 3"));
  CHECK(e.pointer() == "/parallel/pipeline_config");
}

TEST_CASE("sequence chunks under context parallel gather the whole split cache for every chunk") {
  // MindFormers' GLM2 seq_pipe with context_parallel: each chunk's 4096
  // tokens split over cp 2, the layer's cache split by sequence so too and
  // gathered whole (32,768 positions) for the chunk's attention.
  RunSpec run = Qwen72b(8);
  run.model.params.Set("context_parallel", int64_t{2});
  run.parallel.device_num = 128;
  const PreparedRun one = Prepare(Qwen72b(8)), two = Prepare(run);
  const Graph& g = two.sharded.graph;
  const Operator& flash = Op(g, "layer0/attention/flash");
  CHECK(g.tensor(flash.inputs[0]).shape == Shape{1, 4096, 64, 128});  // BSND
  CHECK(g.tensor(flash.inputs[1]).shape == Shape{1, 32768, 8, 128});
  // Forward: per layer an AllGather of the keys and one of the values, each
  // device's half of the 32,768 positions of its one key/value head (8 over TP 8).
  const StageProgram& stage = two.plan.stages[1];
  int gathers = 0;
  for (const Task& t : stage.forward) {
    if (t.kind != Task::Kind::kCollective || t.dimension != CommDimension::kContext) continue;
    ++gathers;
    CHECK(t.collective == Collective::kAllGather);
    CHECK(t.comm_bytes == 16384.0 * 128 * 2);
  }
  CHECK(gathers == 2 * 10);  // 80 layers over 8 stages
  // Each device computes half of what it did without context parallel.
  double flops[2] = {0, 0};
  for (int i = 0; i < 2; ++i)
    for (const Task& t : (i == 0 ? one : two).plan.stages[1].forward) flops[i] += t.flops;
  CHECK(flops[1] == Approx(flops[0] / 2).epsilon(0.01));
  CHECK(Summarize(two.plan, RunAnalytical(two.plan)).step_seconds <
        Summarize(one.plan, RunAnalytical(one.plan)).step_seconds);
}

TEST_CASE("seq_split_num's model errors name the parameter") {
  auto error = [](RunSpec run) { return testing::ExpectConfigError([&] { Prepare(run); }).message(); };
  RunSpec uneven = Qwen72b(8);
  uneven.model.params.Set("seq_split_num", int64_t{3});
  CHECK_THAT(error(uneven), Catch::Contains("seq_split_num 3 does not divide seq_length 32768"));
  RunSpec eager = Qwen72b(8);
  eager.model.params.Set("attention", std::string("eager"));
  CHECK_THAT(error(eager), Catch::Contains("needs attention \"flash\""));
  RunSpec ulysses = Qwen72b(8);
  ulysses.model.params.Set("context_parallel", int64_t{2});
  ulysses.model.params.Set("context_parallel_algo", std::string("ulysses_cp"));
  ulysses.parallel.device_num = 128;
  ulysses.parallel.enable_alltoall = true;
  CHECK_THAT(error(ulysses), Catch::Contains("seq_split_num 8 is not built with Ulysses"));
  RunSpec ring = Qwen72b(8);
  ring.model.params.Set("context_parallel", int64_t{2});
  ring.model.params.Set("use_ring_attention", true);
  ring.parallel.device_num = 128;
  CHECK_THAT(error(ring), Catch::Contains("seq_split_num 8 is not built with use_ring_attention"));
  RunSpec two_sequences = Qwen72b(8);
  two_sequences.model.params.Set("context_parallel", int64_t{2});
  two_sequences.model.params.Set("batch", int64_t{2});
  two_sequences.parallel.device_num = 128;
  two_sequences.parallel.global_batch_size *= 2;
  CHECK_THAT(error(two_sequences), Catch::Contains("is built for one sequence per data-parallel slice"));
}

}  // namespace
}  // namespace shardlab
