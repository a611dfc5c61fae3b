#include "core/analytical/analytical_engine.h"

#include <algorithm>

#include <catch2/catch.hpp>

#include "core/plan/stage_passes.h"
#include "core/report/step_result.h"

namespace shardlab {
namespace {

// The analytical engine's step, summarised.
StepResult Analytical(const Plan& plan) { return Summarize(plan, RunAnalytical(plan)); }


// S stages whose micro-batch takes `f` forward and `b` backward seconds, no communication.
Plan Uniform(int64_t stages, int64_t micro_batches, const std::string& schedule, int64_t chunks, double f, double b) {
  Plan plan;
  plan.schedule = ParsePipelineSchedule(schedule);
  plan.micro_batches = micro_batches;
  plan.chunks = chunks;
  plan.devices = stages;
  plan.devices_per_stage = 1;
  plan.placement = RankPlacement::Contiguous(stages, 1);
  plan.device_memory = 1e12;
  plan.peak_flops = 1e12;
  plan.samples_per_step = micro_batches;
  for (int64_t s = 0; s < stages; ++s) {
    StageProgram stage;
    stage.stage = s;
    // One task per chunk: the engines give each chunk its share of the tasks.
    Task forward, backward;
    forward.seconds = f / static_cast<double>(chunks);
    backward.seconds = b / static_cast<double>(chunks);
    stage.forward.assign(static_cast<size_t>(chunks), forward);
    stage.backward.assign(static_cast<size_t>(chunks), backward);
    plan.stages.push_back(stage);
  }
  return plan;
}

TEST_CASE("GPipe and 1F1B take (M + S - 1)(F + B) with a (S-1)/(M+S-1) bubble") {
  for (const char* schedule : {"gpipe", "1f1b"}) {
    INFO(schedule);
    const StepResult r = Analytical(Uniform(4, 8, schedule, 1, 1.0, 2.0));
    CHECK(r.step_seconds == Approx((8 + 4 - 1) * 3.0));
    CHECK(r.bubble_fraction == Approx(3.0 / 11.0));
    CHECK(r.stages[0].bubble_seconds == Approx(3 * 3.0));
  }
}

TEST_CASE("a blocking send holds its stage until the transfer ends") {
  // Two stages, 4 micro-batches, F = 1, B = 2, a 0.5 s transfer each way.
  // Overlapped, stage 0 waits 2 x 0.5 for each backward's gradient round
  // trip (its last backward starts at 15); blocking, each forward stage 0
  // sends and each backward stage 1 sends also hold their own stage for 0.5,
  // which pushes stage 0's last backward to 15.5.
  Plan plan = Uniform(2, 4, "1f1b", 1, 1.0, 2.0);
  for (StageProgram& stage : plan.stages) stage.send_seconds = 0.5;
  CHECK(Analytical(plan).step_seconds == Approx(17.0));
  for (StageProgram& stage : plan.stages) stage.blocking_sends = true;
  const StepResult blocking = Analytical(plan);
  CHECK(blocking.step_seconds == Approx(17.5));
  // The stage's wait is idle time on its timeline, not compute.
  CHECK(blocking.stages[0].compute_seconds == Approx(4 * 3.0));
}

TEST_CASE("interleaving over v chunks divides the bubble by v") {
  const StepResult r = Analytical(Uniform(4, 8, "interleaved", 2, 1.0, 2.0));
  CHECK(r.step_seconds == Approx(8 * 3.0 + 3 * 3.0 / 2));
}

// `n` tasks of `seconds` each.
std::vector<Task> Tasks(int n, double seconds) {
  Task t;
  t.seconds = seconds;
  return std::vector<Task>(static_cast<size_t>(n), t);
}

// Uniform's stages with each backward split into an input-gradient pass of
// `b` and a weight-gradient pass of `w` seconds.
Plan UniformSplit(int64_t stages, int64_t micro_batches, double f, double b, double w,
                  const std::string& schedule = "zero_bubble_h1") {
  const bool two_chunks = schedule == "zero_bubble_v" || schedule == "dualpipe";
  Plan plan = Uniform(stages, micro_batches, schedule, two_chunks ? 2 : 1, f, b);
  for (StageProgram& stage : plan.stages) {
    Task weight_gradient;
    weight_gradient.seconds = w / static_cast<double>(plan.chunks);
    stage.weight_gradient.assign(static_cast<size_t>(plan.chunks), weight_gradient);
    stage.splits_backward = true;
    if (schedule == "dualpipe") {
      // The mirrored copy's tasks: last in the forward, first in the backward passes.
      stage.forward[1].mirror_copy = stage.backward[0].mirror_copy = stage.weight_gradient[0].mirror_copy = true;
    }
  }
  return plan;
}

TEST_CASE("ZB-H1 shrinks 1F1B's bubble from (S-1)(F+B+W) to (S-1)(F+B-W)") {
  // Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024), section 3.1.
  const StepResult one_f_one_b = Analytical(Uniform(4, 8, "1f1b", 1, 1.0, 2.0));
  const StepResult zb = Analytical(UniformSplit(4, 8, 1.0, 1.0, 1.0));
  CHECK(one_f_one_b.step_seconds == Approx(8 * 3.0 + 3 * 3.0));
  CHECK(zb.step_seconds == Approx(8 * 3.0 + 3 * 1.0));
  CHECK(zb.stages[0].bubble_seconds == Approx(3 * 1.0));
  // Stage s runs micro-batch i's weight-gradient pass after micro-batch i + s's backward, the last s at the end.
  std::vector<std::string> last_stage;
  for (const TraceEvent& e : zb.events)
    if (e.stage == 3 && e.IsPass()) last_stage.push_back(e.name);
  REQUIRE(last_stage.size() == 24);
  CHECK(last_stage[0] == "F0");
  CHECK(last_stage[1] == "B0");
  CHECK(last_stage[2] == "F1");
  CHECK(last_stage[7] == "B3");
  CHECK(last_stage[8] == "W0");  // the fourth backward releases the first weight-gradient pass
  CHECK(last_stage[9] == "F4");
  CHECK(std::vector<std::string>(last_stage.end() - 3, last_stage.end()) == std::vector<std::string>{"W5", "W6", "W7"});
}

TEST_CASE("zero_bubble_v runs MindSpore's order, whose V without the overlap keeps ZB-H1's bubble here") {
  // Each stage's micro-batch: F 2, B 2, W 2 over its two chunks (1 each per chunk).
  const StepResult h1 = Analytical(UniformSplit(4, 8, 2.0, 2.0, 2.0));
  const StepResult v = Analytical(UniformSplit(4, 8, 2.0, 2.0, 2.0, "zero_bubble_v"));
  CHECK(h1.step_seconds == Approx(8 * 6.0 + 3 * 2.0));
  CHECK(Analytical(Uniform(4, 8, "1f1b", 1, 2.0, 4.0)).step_seconds == Approx(8 * 6.0 + 3 * 6.0));
  INFO("zero_bubble_v step " << v.step_seconds << ", stage 0 bubble " << v.stages[0].bubble_seconds);
  // MindSpore's steady state runs each backward before the forward it pairs
  // with, so without pp_1f1b_overlap a stage waits for that backward's
  // gradient where DualPipeV's order (forward first) fills the wait with the
  // forward: ZB-H1's bubble here, against DualPipeV's half of it (8 x 6 + 3 x 1,
  // each arm of the V half a stage; an event-driven replay of both orders
  // from their sources gives the same 54 and 51 s).
  CHECK(v.step_seconds == Approx(8 * 6.0 + 3 * 2.0));
  // Chunk 1 turns on the last stage without a transfer, and every pass runs once.
  int passes = 0;
  for (const TraceEvent& e : v.events) passes += e.IsPass();
  CHECK(passes == 4 * 8 * 6);
}

TEST_CASE("dualpipe's bubble: its two directions fill each other's warm-up and cool-down") {
  // Each chunk's F, B and W 1 s (a stage's micro-batch 2 s each over its two
  // chunks; a dualpipe micro-batch runs one chunk per stage): 8 micro-batches
  // over 4 stages compute 8 x 3 s per stage. An event-driven replay of
  // deepseek-ai/DualPipe's per-rank order gives 25 s (8 over 8 stages and
  // 16 micro-batches: 51 s; with B 2 s, 34 s); 1F1B takes 8 x 6 + 3 x 6 here,
  // ZB-H1 8 x 6 + 3 x 2 over twice the passes.
  const StepResult dual = Analytical(UniformSplit(4, 8, 2.0, 2.0, 2.0, "dualpipe"));
  CHECK(dual.step_seconds == Approx(25.0));
  CHECK(Analytical(UniformSplit(8, 16, 2.0, 2.0, 2.0, "dualpipe")).step_seconds == Approx(51.0));
  CHECK(Analytical(UniformSplit(4, 8, 2.0, 4.0, 2.0, "dualpipe")).step_seconds == Approx(34.0));
  int passes = 0;
  for (const TraceEvent& e : dual.events) passes += e.IsPass();
  CHECK(passes == 4 * 8 * 3);
  // Stage s and its mirror S - 1 - s run the same order, its directions swapped.
  CHECK(dual.stages[0].bubble_seconds == Approx(dual.stages[3].bubble_seconds));
  CHECK(dual.stages[1].bubble_seconds == Approx(dual.stages[2].bubble_seconds));
}

// Uniform's stages, each pass a compute run, a blocking collective of
// `collective` seconds and another compute run (the forward's runs `f`/2
// each, the backward's `b`/2).
Plan UniformWithCollectives(int64_t stages, int64_t micro_batches, const std::string& schedule, int64_t chunks,
                            double f, double b, double collective) {
  Plan plan = Uniform(stages, micro_batches, schedule, chunks, f, b);
  plan.overlap_forward_backward = {{CommDimension::kExpert}, {}};
  for (StageProgram& stage : plan.stages) {
    Task exchange;
    exchange.kind = Task::Kind::kCollective;
    exchange.collective = Collective::kAllToAll;
    exchange.dimension = CommDimension::kExpert;
    exchange.seconds = collective;
    for (auto [tasks, seconds] : {std::pair{&stage.forward, f}, std::pair{&stage.backward, b}})
      *tasks = {Tasks(1, seconds / 2)[0], exchange, Tasks(1, seconds / 2)[0]};
  }
  return plan;
}

TEST_CASE("overlapped units run each pass's collectives beside the other's compute") {
  // Without pipelining (Megatron's combined 1F1B): F0, then B(i) with F(i+1), then B7.
  // A unit: B's first run (1), B's collective beside F's first run (max(1, 0.5)),
  // F's collective beside B's second run (max(1, 1)), F's second run (0.5): 3.5
  // against the 5 they take one after another.
  Plan plan = UniformWithCollectives(1, 8, "1f1b", 1, 1.0, 2.0, 1.0);
  const StepResult overlapped = Analytical(plan);
  CHECK(overlapped.step_seconds == Approx(2.0 + 7 * 3.5 + 3.0));
  plan.overlap_forward_backward = {};
  const StepResult serial = Analytical(plan);
  CHECK(serial.step_seconds == Approx(8 * 5.0));
  // The timeline shows a unit's passes one after another, its exposed collectives shared out.
  std::vector<const TraceEvent*> passes;
  for (const TraceEvent& e : overlapped.events)
    if (e.IsPass()) passes.push_back(&e);
  REQUIRE(passes.size() == 16);
  CHECK(passes[1]->name == "B0");
  CHECK(passes[2]->name == "F1");
  CHECK(passes[2]->start == Approx(passes[1]->end()));
  CHECK(passes[2]->end() == Approx(2.0 + 3.5));
  CHECK(overlapped.stages[0].exposed_communication_seconds == Approx(1.0 + 7 * 0.5 + 1.0));
  // Collectives of a dimension not listed still block the compute.
  plan.overlap_forward_backward = {{CommDimension::kTensor}, {}};
  CHECK(Analytical(plan).step_seconds == Approx(2.0 + 7 * 5.0 + 3.0));
  // Every schedule runs its units without deadlock, faster than one pass at a time.
  for (const char* schedule : {"1f1b", "interleaved", "zero_bubble_h1", "zero_bubble_v"})
    for (int64_t stages : {2, 4, 8}) {
      INFO(schedule << ", " << stages << " stages");
      const bool chunked = std::string(schedule) == "interleaved" || std::string(schedule) == "zero_bubble_v";
      Plan p = UniformWithCollectives(stages, 4 * stages, schedule, chunked ? 2 : 1, 1.0, 2.0, 1.0);
      if (SplitsBackward(p.schedule))
        for (StageProgram& stage : p.stages) {
          stage.weight_gradient = Tasks(1, 0.5);
          stage.splits_backward = true;
        }
      const StepResult with = Analytical(p);
      p.overlap_forward_backward = {};
      CHECK(with.step_seconds < Analytical(p).step_seconds);
    }
}

TEST_CASE("a split backward's buckets become ready in its weight-gradient pass") {
  Plan plan = UniformSplit(1, 1, 1.0, 1.0, 0.0);
  StageProgram& stage = plan.stages[0];
  stage.weight_gradient = Tasks(2, 1.0);
  GradientBucket early, late;
  early.ready_after = -1;  // its gradients all came with the input-gradient pass
  early.seconds = 1.0;
  late.ready_after = 1;
  late.seconds = 0.5;
  stage.buckets = {early, late};
  const StepResult r = Analytical(plan);
  // F 1, B 1, W 2; the early bucket runs beside the W pass, the late one after it.
  CHECK(r.step_seconds == Approx(4.5));
  CHECK(r.exposed_communication_seconds == Approx(0.5));
}

TEST_CASE("gradient buckets overlap the rest of the backward pass") {
  Plan plan = Uniform(1, 1, "1f1b", 1, 1.0, 0.0);
  StageProgram& stage = plan.stages[0];
  stage.backward = Tasks(4, 1.0);
  GradientBucket early;
  early.ready_after = 0;
  early.seconds = 0.5;
  stage.buckets = {early};
  StepResult r = Analytical(plan);
  CHECK(r.step_seconds == Approx(5.0));
  CHECK(r.exposed_communication_seconds == Approx(0.0));
  GradientBucket last;
  last.ready_after = 3;
  last.seconds = 0.5;
  stage.buckets = {early, last};
  r = Analytical(plan);
  CHECK(r.step_seconds == Approx(5.5));
  CHECK(r.exposed_communication_seconds == Approx(0.5));
  CHECK(r.communication_seconds == Approx(1.0));
}

TEST_CASE("under interleaving a chunk's gradient buckets reduce once that chunk's last backward ends") {
  // Two stages, 4 micro-batches over 2 chunks; each chunk's backward is one
  // task (the first of the backward list is chunk 1's, the layers run last
  // to first). Bucket 0 holds chunk 1's gradients, bucket 1 chunk 0's: the
  // first reduces as soon as the step's last chunk-1 backward ends, beside
  // the chunk-0 backwards still to come, not after the last of them.
  Plan plan = Uniform(2, 4, "interleaved", 2, 1.0, 2.0);
  StageProgram& stage = plan.stages[0];
  GradientBucket of_chunk_1, of_chunk_0;
  of_chunk_1.ready_after = 0;
  of_chunk_1.seconds = 2.0;
  of_chunk_0.ready_after = 1;
  of_chunk_0.seconds = 0.1;
  stage.buckets = {of_chunk_1, of_chunk_0};
  CHECK(BucketChunks(stage, 2) == std::vector<int64_t>{1, 0});
  const Trace trace = RunAnalytical(plan);
  double last_backward_end[2] = {0, 0}, gradients_start[2] = {-1, -1}, gradients_end[2] = {0, 0};
  for (const TraceEvent& e : trace.events) {
    if (e.stage != 0) continue;
    if (e.kind == EventKind::kBackward) last_backward_end[e.chunk] = std::max(last_backward_end[e.chunk], e.end());
    if (e.kind == EventKind::kGradient) {
      const int b = e.name == "gradients 0" ? 0 : 1;
      gradients_start[b] = e.start;
      gradients_end[b] = e.end();
    }
  }
  REQUIRE(last_backward_end[1] < last_backward_end[0]);
  CHECK(gradients_start[0] == Approx(last_backward_end[1]));
  CHECK(gradients_start[1] == Approx(std::max(last_backward_end[0], gradients_end[0])));
  // Both run beside the remaining chunk-0 backward of stage 0: the step ends with bucket 1.
  CHECK(Analytical(plan).step_seconds == Approx(gradients_end[1]).epsilon(1e-9));
}

TEST_CASE("throughput and MFU follow from the step time") {
  Plan plan = Uniform(1, 2, "1f1b", 1, 1.0, 1.0);
  plan.model_flops = 4e12;
  plan.tokens_per_step = 200;
  const StepResult r = Analytical(plan);
  CHECK(r.step_seconds == Approx(4.0));
  CHECK(r.samples_per_second == Approx(0.5));
  CHECK(r.tokens_per_second == Approx(50));
  CHECK(r.mfu == Approx(1.0));
}

}  // namespace
}  // namespace shardlab
