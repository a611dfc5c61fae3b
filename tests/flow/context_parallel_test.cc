// Context parallelism through the whole flow (run -> strategies -> plan ->
// analytical step) on LLaMA-2 70B: each sequence split over cp devices, the
// keys and values gathered over them for attention (or the sequence
// exchanged for heads, Ulysses), everything else split like extra data
// parallelism; the ring variant hides the exchange behind the attention compute.
#include <set>

#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/layout/device_matrix.h"
#include "core/report/graph_summary.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

// LLaMA-2 70B, TP 8 with sequence parallelism, PP 4, one sequence of 4096
// tokens per data-parallel slice and micro-batch: data_parallel 16 and
// context_parallel `cp` on 512 x cp GPUs.
RunSpec Llama70b(int64_t cp, bool ring = false) {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.model.params.Set("data_parallel", int64_t{16});
  run.model.params.Set("context_parallel", cp);
  run.model.params.Set("use_ring_attention", ring);
  run.parallel.device_num = 512 * cp;
  run.parallel.global_batch_size = 16 * run.parallel.micro_batch_num;
  run.model.params.Set("batch", int64_t{16});
  return run;
}

// `run` with context_parallel_algo `algo` (and ulysses_degree_in_cp
// `degree` for hybrid_cp), its AlltoAlls allowed.
RunSpec Ulysses(RunSpec run, const std::string& algo, int64_t degree = 1) {
  run.model.params.Set("context_parallel_algo", algo);
  run.model.params.Set("ulysses_degree_in_cp", degree);
  run.parallel.enable_alltoall = true;
  return run;
}

std::vector<const Task*> ContextTasks(const std::vector<Task>& tasks) {
  std::vector<const Task*> out;
  for (const Task& t : tasks)
    if (t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kContext) out.push_back(&t);
  return out;
}

double Flops(const StageProgram& s) {
  double flops = 0;
  for (const auto* pass : {&s.forward, &s.backward})
    for (const Task& t : *pass) flops += t.flops;
  return flops;
}

// The members of the group of `spec` that holds the stage's first device, by local index.
std::vector<int64_t> FirstGroup(const CommGroupSpec& spec) {
  return DeviceMatrix(spec.device_matrix).GroupAlongDims(0, spec.dims);
}

const DimensionCommunication& Dimension(const StageResult& s, CommDimension d) {
  return s.communication.at(static_cast<size_t>(d));
}

TEST_CASE("context parallel gathers each layer's keys and values over the group and halves the rest") {
  const PreparedRun one = Prepare(Llama70b(1)), two = Prepare(Llama70b(2));
  const StageProgram &a = one.plan.stages[1], &b = two.plan.stages[1];
  const int layers = 20;  // 80 layers over 4 stages
  CHECK(ContextTasks(a.forward).empty());
  CHECK(ContextTasks(a.backward).empty());
  // Forward: an AllGather of the keys and one of the values per layer, each
  // device contributing its 2048 tokens of its one key/value head (8 heads
  // over TP 8) of 128 bf16 values, over the pair of devices 8 ranks apart.
  const auto forward = ContextTasks(b.forward);
  REQUIRE(forward.size() == 2 * layers);
  for (const Task* t : forward) {
    CHECK(t->collective == Collective::kAllGather);
    CHECK(t->comm_bytes == 2048.0 * 128 * 2);
    CHECK_FALSE(t->overlapped);
    CHECK(b.groups[t->group].size == 2);
    CHECK(FirstGroup(b.groups[t->group]) == std::vector<int64_t>{0, 8});
  }
  // Backward: gathered again (only the own chunk was kept), and the
  // gradients reduce-scattered from the whole sequence's; the run's full
  // recompute gathers them once more for the recomputed forward.
  const auto backward = ContextTasks(b.backward);
  REQUIRE(backward.size() == 6 * layers);
  int recomputed = 0, again = 0, scatters = 0;
  for (const Task* t : backward) {
    if (t->collective == Collective::kAllGather) {
      CHECK(t->comm_bytes == 2048.0 * 128 * 2);
      const bool recompute = t->name.find(".recompute") != std::string::npos;
      CHECK(t->recompute == recompute);
      recompute ? ++recomputed : ++again;
      if (!recompute) CHECK(t->name.find(".again") != std::string::npos);
    } else {
      CHECK(t->collective == Collective::kReduceScatter);
      CHECK(t->comm_bytes == 4096.0 * 128 * 2);
      ++scatters;
    }
  }
  CHECK(recomputed == 2 * layers);
  CHECK(again == 2 * layers);
  CHECK(scatters == 2 * layers);
  // Without recompute: gathered again for the backward only.
  RunSpec kept = Llama70b(2);
  kept.parallel.recompute = false;
  CHECK(ContextTasks(Prepare(kept).plan.stages[1].backward).size() == 4 * layers);
  // The keys' and values' gradients are summed by those ReduceScatters, not AllReduced too.
  for (const Task& t : b.backward)
    CHECK_FALSE((t.kind == Task::Kind::kCollective && t.name.find("flash/grad") != std::string::npos));
  // The same parameters; half the tokens, so half the activations kept and
  // about half the compute per device (attention's causal half included).
  CHECK(SummarizeGraph(two.graph, 1).parameters == SummarizeGraph(one.graph, 1).parameters);
  CHECK(b.memory.parameters == Approx(a.memory.parameters));
  CHECK(b.memory.activations_per_micro_batch == Approx(a.memory.activations_per_micro_batch / 2).epsilon(0.02));
  const StepResult x = Summarize(one.plan, RunAnalytical(one.plan));
  const StepResult y = Summarize(two.plan, RunAnalytical(two.plan));
  // Half the FLOPs; a little more than half the time, the GEMMs and attention
  // blocks being half as long.
  CHECK(Flops(b) == Approx(Flops(a) / 2).epsilon(1e-6));
  CHECK(y.stages[1].compute_seconds > x.stages[1].compute_seconds / 2);
  CHECK(y.stages[1].compute_seconds < 0.56 * x.stages[1].compute_seconds);
  CHECK(y.step_seconds < x.step_seconds);
  // Per micro-batch, keys and values gathered three times, their gradients scattered once.
  const double per_micro_batch = 2 * layers * (3 * 2048.0 * 128 * 2 + 4096.0 * 128 * 2);
  CHECK(Dimension(y.stages[1], CommDimension::kContext).bytes == Approx(one.plan.micro_batches * per_micro_batch));
  CHECK(Dimension(x.stages[1], CommDimension::kContext).bytes == 0);
  CHECK(Dimension(y.stages[1], CommDimension::kContext).exposed_seconds > 0);
}

TEST_CASE("context parallel reduces gradients over data x context parallel devices") {
  // Tensor-parallel weights' gradients over data_parallel x context_parallel
  // replicas; the norms' (whole on every device) over the stage.
  for (const int64_t cp : {1, 2}) {
    const PreparedRun run = Prepare(Llama70b(cp));
    const StageProgram& s = run.plan.stages[1];
    std::set<int64_t> sizes;
    for (const GradientBucket& bucket : s.buckets) {
      const CommGroupSpec& group = s.groups[bucket.group];
      sizes.insert(group.size);
      if (group.size != 16 * cp) continue;
      // The replicas of a weight slice: every 8th device of the stage.
      const auto members = FirstGroup(group);
      CHECK(members[1] - members[0] == 8);
    }
    CHECK(sizes == std::set<int64_t>{16 * cp, 128 * cp});
  }
}

TEST_CASE("ring attention passes the same bytes beside the attention compute") {
  const PreparedRun gather = Prepare(Llama70b(2)), ring = Prepare(Llama70b(2, true));
  const auto a = ContextTasks(gather.plan.stages[1].forward), b = ContextTasks(ring.plan.stages[1].forward);
  REQUIRE(a.size() == b.size());
  for (const Task* t : b) CHECK(t->overlapped);
  const StepResult x = Summarize(gather.plan, RunAnalytical(gather.plan));
  const StepResult y = Summarize(ring.plan, RunAnalytical(ring.plan));
  CHECK(Dimension(y.stages[1], CommDimension::kContext).bytes ==
        Approx(Dimension(x.stages[1], CommDimension::kContext).bytes));
  CHECK(Dimension(y.stages[1], CommDimension::kContext).exposed_seconds <
        Dimension(x.stages[1], CommDimension::kContext).exposed_seconds / 2);
  CHECK(y.step_seconds < x.step_seconds);
}

TEST_CASE("ring attention runs one kernel per chunk of the keys as they come round") {
  const PreparedRun gather = Prepare(Llama70b(4)), ring = Prepare(Llama70b(4, true));
  auto attention = [](const PreparedRun& r, bool backward) -> const Task* {
    for (const Task& t : backward ? r.plan.stages[1].backward : r.plan.stages[1].forward)
      if (t.kind == Task::Kind::kCompute && !t.kernel.attention.empty()) return &t;
    return nullptr;
  };
  for (const bool backward : {false, true}) {
    const Task *a = attention(gather, backward), *b = attention(ring, backward);
    REQUIRE(a);
    REQUIRE(b);
    // The same work: the gathered keys in one kernel, or four kernels of a quarter each.
    CHECK(b->flops == a->flops);
    CHECK(a->kernel.attention.steps == 1);
    CHECK(b->kernel.attention.steps == 4);
    CHECK(b->kernel.attention.kv_length * 4 == a->kernel.attention.kv_length);
    // Shorter kernels reach less of the peak and pay four launches.
    CHECK(b->seconds > a->seconds);
  }
}

TEST_CASE("Ulysses exchanges sequence for heads by AlltoAll around attention") {
  const PreparedRun gather = Prepare(Llama70b(2)), ulysses = Prepare(Ulysses(Llama70b(2), "ulysses_cp"));
  const StageProgram& s = ulysses.plan.stages[1];
  const int layers = 20;
  // Queries, keys and values in, the context out: an AlltoAll each over the
  // pair 8 ranks apart, of the device's [1, 2048, 8, 128] bf16 slice (the 8
  // key/value heads repeated to the 64 query heads: 8 per model-parallel
  // device cannot split over 2 more); the same four back in the backward.
  for (const auto* pass : {&s.forward, &s.backward}) {
    const auto tasks = ContextTasks(*pass);
    REQUIRE(tasks.size() == 4 * layers);
    for (const Task* t : tasks) {
      CHECK(t->collective == Collective::kAllToAll);
      CHECK(t->comm_bytes == 2048.0 * 8 * 128 * 2);
      CHECK(FirstGroup(s.groups[t->group]) == std::vector<int64_t>{0, 8});
    }
  }
  // No other communication moves heads: the tensor-parallel collectives are
  // the gathering run's.
  auto tensor_tasks = [](const StageProgram& stage) {
    size_t n = 0;
    for (const Task& t : stage.forward) n += t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kTensor;
    return n;
  };
  CHECK(tensor_tasks(s) == tensor_tasks(gather.plan.stages[1]));
  // Attention sees whole sequences, a quarter of the heads per device (64
  // over 2 x 8), the same FLOPs as the gathering run's half-sequence queries.
  const int flash = *ulysses.sharded.graph.FindOperator("layer20/attention/flash");
  CHECK(ulysses.sharded.layouts[flash].inputs[0].SliceShape() == Shape{1, 4096, 4, 128});
  CHECK(ulysses.sharded.layouts[flash].inputs[1].SliceShape() == Shape{1, 4096, 4, 128});
  CHECK(Flops(s) == Approx(Flops(gather.plan.stages[1])).epsilon(1e-6));
}

TEST_CASE("hybrid context parallel runs Ulysses inside and gathers keys and values across") {
  // context_parallel 4 = 2 (gathering, outer) x 2 (Ulysses, inner).
  const PreparedRun run = Prepare(Ulysses(Llama70b(4), "hybrid_cp", 2));
  const StageProgram& s = run.plan.stages[1];
  const int layers = 20;
  const auto forward = ContextTasks(s.forward);
  size_t exchanges = 0, gathers = 0;
  for (const Task* t : forward) {
    const auto members = FirstGroup(s.groups[t->group]);
    if (t->collective == Collective::kAllToAll) {
      ++exchanges;
      CHECK(members == std::vector<int64_t>{0, 8});
    } else {
      ++gathers;
      CHECK(t->collective == Collective::kAllGather);
      CHECK(members == std::vector<int64_t>{0, 16});
      // The keys after the exchange: the ring part's 2048 tokens, 4 repeated heads.
      CHECK(t->comm_bytes == 2048.0 * 4 * 128 * 2);
    }
  }
  CHECK(exchanges == 4 * layers);
  CHECK(gathers == 2 * layers);
  const int flash = *run.sharded.graph.FindOperator("layer20/attention/flash");
  CHECK(run.sharded.layouts[flash].inputs[0].SliceShape() == Shape{1, 2048, 4, 128});
}

// Mixtral 8x7B as shipped (64 H100, PP 4, expert parallel 8, 16 micro-batches
// of one 4096-token sequence per data-parallel slice) with its 16
// data-parallel devices of a stage split as data_parallel 16 / cp x cp.
RunSpec Mixtral(int64_t cp) {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/mixtral-8x7b-h100-64.json"));
  run.model.params.Set("data_parallel", 16 / cp);
  run.model.params.Set("context_parallel", cp);
  run.parallel.global_batch_size = 16 / cp * run.parallel.micro_batch_num;
  run.model.params.Set("batch", 16 / cp);
  return run;
}

double ExpertExchangeBytes(const StageProgram& s) {
  double bytes = 0;
  for (const Task& t : s.forward)
    if (t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kExpert) bytes += t.comm_bytes;
  return bytes;
}

TEST_CASE("context parallel splits a mixture-of-experts layer's tokens and lays the experts over every device") {
  const PreparedRun one = Prepare(Mixtral(1)), two = Prepare(Mixtral(2));
  CHECK(SummarizeGraph(two.graph, 1).parameters == SummarizeGraph(one.graph, 1).parameters);
  const StageProgram &a = one.plan.stages[1], &b = two.plan.stages[1];
  // Each device routes half a sequence per micro-batch: the expert exchange halves.
  CHECK(ExpertExchangeBytes(a) > 0);
  CHECK(ExpertExchangeBytes(b) == Approx(ExpertExchangeBytes(a) / 2));
  // Its expert group spans data x context parallel devices: 8 of the 16, as without context parallel.
  for (const Task& t : b.forward)
    if (t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kExpert) CHECK(b.groups[t.group].size == 8);
  CHECK(!ContextTasks(b.forward).empty());
  // The dense gradients are reduced over all 16 devices either way, the experts' over the same 2 copies.
  const StepResult ra = Summarize(one.plan, RunAnalytical(one.plan)), rb = Summarize(two.plan, RunAnalytical(two.plan));
  CHECK(Dimension(rb.stages[1], CommDimension::kData).bytes ==
        Approx(Dimension(ra.stages[1], CommDimension::kData).bytes));
  CHECK(Dimension(rb.stages[1], CommDimension::kExpert).bytes ==
        Approx(Dimension(ra.stages[1], CommDimension::kExpert).bytes / 2));
  // Expert parallel is carved from the data x context parallel devices: 16 of them take 16 experts,
  // 32 do not fit.
  RunSpec wide = Mixtral(2);
  wide.model.params.Set("experts", int64_t{16});
  wide.model.params.Set("expert_parallel", int64_t{16});
  const PreparedRun sixteen = Prepare(wide);
  for (const Task& t : sixteen.plan.stages[1].forward)
    if (t.kind == Task::Kind::kCollective && t.dimension == CommDimension::kExpert)
      CHECK(sixteen.plan.stages[1].groups[t.group].size == 16);
  wide.model.params.Set("experts", int64_t{32});
  wide.model.params.Set("expert_parallel", int64_t{32});
  CHECK_THROWS_WITH(Prepare(wide), Catch::Contains("expert_parallel 32 does not divide data_parallel x "
                                                   "context_parallel 16"));
}

// DeepSeek-V3 cut to 8 layers (3 dense, then 5 with experts) on 256 H800 of
// its cluster: PP 2, expert parallel 64 over data_parallel 128 / cp x cp,
// one 4096-token sequence per data-parallel slice and micro-batch.
RunSpec DeepSeek(int64_t cp) {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/deepseek-v3-h800-2048.json"));
  run.model.params.Set("layers", int64_t{8});
  run.model.params.Set("offset", std::vector<int64_t>{0, 0});
  run.parallel.device_num = 256;
  run.parallel.pipeline_stages = 2;
  run.parallel.micro_batch_num = 4;
  run.model.params.Set("data_parallel", 128 / cp);
  run.model.params.Set("context_parallel", cp);
  run.model.params.Set("batch", 128 / cp);
  run.parallel.global_batch_size = 128 / cp * 4;
  return run;
}

TEST_CASE("context parallel gathers latent attention's up-projected keys and values") {
  const PreparedRun one = Prepare(DeepSeek(1)), two = Prepare(DeepSeek(2));
  const StageProgram& b = two.plan.stages[1];
  CHECK(ContextTasks(one.plan.stages[1].forward).empty());
  // Per layer an AllGather of the keys (128 heads of 192: the 128 own and the 64 shared rotary
  // dimensions) and of the values (128 heads of 128), each device's 2048 tokens in bf16.
  std::multiset<double> bytes;
  for (const Task* t : ContextTasks(b.forward)) {
    CHECK(t->collective == Collective::kAllGather);
    bytes.insert(t->comm_bytes);
  }
  const int layers = 4;
  CHECK(bytes.count(2048.0 * 128 * 192 * 2) == layers);
  CHECK(bytes.count(2048.0 * 128 * 128 * 2) == layers);
  CHECK(bytes.size() == 2 * layers);
  // Half the FLOPs per device, the same parameters.
  CHECK(Flops(b) == Approx(Flops(one.plan.stages[1]) / 2).epsilon(0.01));
  // Ulysses would need the heads exchanged, which latent attention does not build.
  RunSpec ulysses = Ulysses(DeepSeek(2), "ulysses_cp");
  CHECK_THROWS_WITH(Prepare(ulysses), Catch::Contains("not built for multi-head latent attention"));
}

TEST_CASE("context parallel lays a slice's sequences end to end, attention inside each") {
  // Two sequences per data-parallel slice and micro-batch (MindFormers'
  // batch_size 2 with context_parallel): what two micro-batches of one
  // sequence each cost. Twice the FLOPs, twice the keys and values gathered,
  // twice the activations a micro-batch keeps.
  RunSpec doubled = Llama70b(2);
  doubled.parallel.global_batch_size *= 2;
  doubled.model.params.Set("batch", int64_t{32});
  const PreparedRun one = Prepare(Llama70b(2)), two = Prepare(doubled);
  const StageProgram &a = one.plan.stages[1], &b = two.plan.stages[1];
  CHECK(Flops(b) == Approx(2 * Flops(a)).epsilon(1e-9));
  const auto gathers = ContextTasks(a.forward), doubled_gathers = ContextTasks(b.forward);
  REQUIRE(doubled_gathers.size() == gathers.size());
  for (size_t i = 0; i < gathers.size(); ++i) CHECK(doubled_gathers[i]->comm_bytes == 2 * gathers[i]->comm_bytes);
  CHECK(b.memory.activations_per_micro_batch == Approx(2 * a.memory.activations_per_micro_batch).epsilon(0.01));
  // The attention reads each slice as one row of two 4096-token documents.
  int attentions = 0;
  for (const Operator& op : two.graph.operators()) {
    if (op.type != "FlashAttentionScore") continue;
    ++attentions;
    CHECK(op.IntAttr("document_length", 0) == 4096);
    CHECK(two.graph.tensor(op.inputs[0]).shape[0] == 16);
    CHECK(two.graph.tensor(op.inputs[0]).shape[1] == 8192);
  }
  CHECK(attentions == 80);
}

TEST_CASE("context parallel refuses what it cannot split") {
  RunSpec run = Llama70b(2);
  run.model.params.Set("attention", std::string("eager"));
  run.model.params.Set("kv_heads", int64_t{64});
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("context_parallel 2 needs attention \"flash\""));
  run = Llama70b(2);
  run.model.params.Set("batch", int64_t{24});
  run.model.params.Set("data_parallel", int64_t{16});
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("not a whole number of sequences"));
  run = Llama70b(2);
  run.model.params.Set("use_seq_parallel", false);
  run.model.params.Set("seq_length", int64_t{4094});
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("2 x 2 chunks"));
  run = Ulysses(Llama70b(2), "ulysses_cp");
  run.model.params.Set("heads", int64_t{24});  // 24 heads over 2 x 8 devices
  run.model.params.Set("head_dim", int64_t{128});
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("heads 24 must divide into 2 x model_parallel 8"));
  run = Ulysses(Llama70b(4), "hybrid_cp", 3);
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("ulysses_degree_in_cp 3 does not divide context_parallel 4"));
  run = Ulysses(Llama70b(1), "hybrid_cp", 2);
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("set context_parallel > 1"));
  run = Ulysses(Llama70b(2, true), "ulysses_cp");
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("which context_parallel_algo \"ulysses_cp\" does not have"));
  run = Llama70b(1, true);
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("set context_parallel > 1"));
  run = Llama70b(2);
  run.model.params.Set("seq_length", int64_t{4104});  // divisible by 8 and by 4, not by 16
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("over context_parallel x model_parallel = 16"));
}

}  // namespace
}  // namespace shardlab
