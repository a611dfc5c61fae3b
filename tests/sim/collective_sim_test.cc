// SimGrid runs of expanded collectives against their closed forms. One
// SimGrid engine per process: every test case runs in its own ctest process.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <catch2/catch.hpp>
#include <simgrid/s4u/Engine.hpp>

#include "core/util/json_reader.h"
#include "sim/cluster_platform.h"
#include "sim/flow_runner.h"
#include "tests/test_util.h"

namespace shardlab::sim {
namespace {

std::vector<int64_t> Strided(int64_t n, int64_t stride) {
  std::vector<int64_t> members;
  for (int64_t i = 0; i < n; ++i) members.push_back(i * stride);
  return members;
}

// The cluster with its collectives timed by the links' alpha-beta instead of
// NCCL's model: what the link-level expansions are checked against.
ClusterSpec AlphaBeta(ClusterSpec cluster) {
  cluster.device.compute_capability = 0;
  return cluster;
}

// Simulated seconds of the collectives, started together at time 0.
std::vector<double> Simulate(const ClusterSpec& cluster, int64_t devices, const std::vector<std::vector<Phase>>& runs) {
  ClusterPlatform platform(cluster, devices);
  FlowRunner runner(platform);
  std::vector<double> ends(runs.size());
  for (size_t i = 0; i < runs.size(); ++i)
    runner.Run(runs[i], [&ends, i] { ends[i] = simgrid::s4u::Engine::get_clock(); });
  platform.engine().run();
  return ends;
}

TEST_CASE("a ring AllReduce on an idle uniform ring matches 2(n-1)/n S/B + 2(n-1) alpha within 1%") {
  const ClusterSpec cluster = AlphaBeta(testing::ShippedCluster("dgx-h100-ndr"));
  const auto members = Strided(16, 8);  // one GPU per server, all on one rail leaf
  const double bytes = 1 << 30;
  const double alpha = 2 * 0.7e-6 + 0.13e-6, beta = 50e9;
  const double closed = 2.0 * 15 / 16 * bytes / beta + 2 * 15 * alpha;
  const auto t = Simulate(
      cluster, 16 * 8,
      {ExpandCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes, members, 8, Fidelity::kAggregated)});
  CHECK(t[0] == Approx(closed).epsilon(0.01));
  CHECK(t[0] == Approx(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes,
                                         PlaceGroup(members, cluster), cluster))
                    .epsilon(0.01));
}

// A ring AllReduce of 1 GiB over the n devices of one scale-up domain (a
// "server" of the cluster file) stays inside it: its simulated time is the
// closed form at `bandwidth` per device each way and `latency` a step, as
// CollectiveSeconds gives it.
void CheckScaleUpRing(const ClusterSpec& cluster, int64_t n, double bandwidth, double latency) {
  const auto members = Strided(n, 1);
  const GroupPlacement placement = PlaceGroup(members, cluster);
  CHECK(placement.servers == 1);
  CHECK(placement.per_server == n);
  const double bytes = 1 << 30;
  const double closed = 2.0 * (n - 1) / n * bytes / bandwidth + 2 * (n - 1) * latency;
  const auto t = Simulate(
      cluster, 2 * n,
      {ExpandCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes, members, n, Fidelity::kAggregated)});
  CHECK(t[0] == Approx(closed).epsilon(0.01));
  CHECK(t[0] == Approx(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes, placement, cluster))
                    .epsilon(0.01));
}

TEST_CASE("a ring AllReduce over the 72 GPUs of one NVL72 rack stays on NVLink and matches its closed form") {
  CheckScaleUpRing(AlphaBeta(testing::ShippedCluster("gb200-nvl72")), 72, 900e9, 3e-6);
}

TEST_CASE("a ring AllReduce over the 384 NPUs of a CloudMatrix supernode stays on its Unified Bus") {
  // 392 GB/s per NPU each way through the UB switches, 3 us a step.
  CheckScaleUpRing(testing::ShippedCluster("cloudmatrix384-910c"), 384, 392e9, 3e-6);
}

TEST_CASE("step fidelity agrees with aggregated flows on a uniform ring") {
  const ClusterSpec cluster = AlphaBeta(testing::ShippedCluster("dgx-a100-hdr"));
  const auto members = Strided(8, 8);
  const double bytes = 64 << 20;
  const auto t = Simulate(
      cluster, 64,
      {ExpandCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes, members, 8, Fidelity::kStep)});
  const double closed = CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes,
                                          PlaceGroup(members, cluster), cluster);
  CHECK(t[0] == Approx(closed).epsilon(0.01));
}

// Simulated seconds of each collective, run one after the other on one platform.
std::vector<double> SimulateInTurn(const ClusterSpec& cluster, int64_t devices,
                                   const std::vector<std::vector<Phase>>& runs) {
  ClusterPlatform platform(cluster, devices);
  FlowRunner runner(platform);
  std::vector<double> seconds(runs.size());
  std::function<void(size_t)> launch = [&](size_t i) {
    if (i == runs.size()) return;
    const double start = simgrid::s4u::Engine::get_clock();
    runner.Run(runs[i], [&, i, start] {
      seconds[i] = simgrid::s4u::Engine::get_clock() - start;
      launch(i + 1);
    });
  };
  launch(0);
  platform.engine().run();
  return seconds;
}

TEST_CASE("every NCCL algorithm's flows reproduce NCCL's time on an idle network") {
  // Every NCCL algorithm runs as its channels' rings over the links NCCL
  // uses (AllToAll as its point-to-point sends), scaled to NCCL's time: on
  // an idle network SimGrid reproduces it.
  struct Case {
    Collective c;
    CollectiveAlgorithm a;
    int64_t ranks, stride;
  };
  const Case cases[] = {{Collective::kAllReduce, CollectiveAlgorithm::kRing, 8, 1},
                        {Collective::kAllReduce, CollectiveAlgorithm::kNvls, 8, 1},
                        {Collective::kAllGather, CollectiveAlgorithm::kNvls, 8, 1},
                        {Collective::kReduceScatter, CollectiveAlgorithm::kRing, 8, 1},
                        {Collective::kAllReduce, CollectiveAlgorithm::kDoubleBinaryTree, 16, 8},
                        {Collective::kAllReduce, CollectiveAlgorithm::kRing, 32, 1},
                        {Collective::kAllReduce, CollectiveAlgorithm::kNvlsTree, 32, 1},
                        {Collective::kBroadcast, CollectiveAlgorithm::kRing, 16, 8},
                        {Collective::kAllToAll, CollectiveAlgorithm::kPairwise, 8, 1},
                        {Collective::kAllToAll, CollectiveAlgorithm::kPairwise, 32, 1}};
  const ClusterSpec h100 = testing::ShippedCluster("dgx-h100-ndr");
  std::vector<std::vector<Phase>> runs;
  std::vector<CollectiveTiming> timings;
  for (const Case& k : cases)
    for (double bytes : {8.0, 65536.0, 16e6, 1073741824.0}) {
      const auto members = Strided(k.ranks, k.stride);
      timings.push_back(TimeCollective(k.c, k.a, bytes, PlaceGroup(members, h100), h100));
      REQUIRE(timings.back().library.timed);
      runs.push_back(ExpandCollective(k.c, k.a, bytes, members, 8, Fidelity::kStep, timings.back().library));
    }
  const std::vector<double> t = SimulateInTurn(h100, 128, runs);
  for (size_t i = 0; i < t.size(); ++i) {
    INFO("case " << i / 4 << ", size " << i % 4);
    CHECK(t[i] == Approx(timings[i].seconds).epsilon(0.02));
  }
}

TEST_CASE("a flex dispatch's AlltoAll crosses servers with its share of the bytes and matches its closed form") {
  // 64 members on 8 servers (DeepSeek-V3's expert group): the flows between servers carry half their
  // bytes (a token reaches 4 of 8 servers), the NVLink flows all of theirs; on an idle network SimGrid
  // reproduces TimeCollective's time with the same share.
  const ClusterSpec h100 = testing::ShippedCluster("dgx-h100-ndr");
  const auto members = Strided(64, 1);
  const GroupPlacement placement = PlaceGroup(members, h100);
  std::vector<std::vector<Phase>> runs;
  std::vector<double> closed;
  for (double share : {1.0, 0.5})
    for (double bytes : {16e6, 1073741824.0}) {
      const CollectiveTiming t =
          TimeCollective(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, bytes, placement, h100, share);
      closed.push_back(t.seconds);
      runs.push_back(ExpandCollective(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, bytes, members, 8,
                                      Fidelity::kAggregated, t.library, share));
    }
  double crossing = 0;  // the 1 GiB flex exchange's bytes between servers
  for (const Flow& f : runs[3][0].flows)
    if (f.src / 8 != f.dst / 8) crossing += f.bytes;
  const auto plain = ExpandCollective(
      Collective::kAllToAll, CollectiveAlgorithm::kPairwise, 1073741824.0, members, 8, Fidelity::kAggregated,
      TimeCollective(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, 1073741824.0, placement, h100, 0.5)
          .library);
  double plain_crossing = 0;
  for (const Flow& f : plain[0].flows)
    if (f.src / 8 != f.dst / 8) plain_crossing += f.bytes;
  CHECK(crossing == Approx(0.5 * plain_crossing));
  const std::vector<double> t = SimulateInTurn(h100, 64, runs);
  for (size_t i = 0; i < t.size(); ++i) {
    INFO("case " << i);
    CHECK(t[i] == Approx(closed[i]).epsilon(0.02));
  }
  CHECK(closed[3] < 0.6 * closed[1]);  // the NICs bind: half the crossing, about half the time
}

TEST_CASE("HCCL's full mesh loads every HCCS link of the group at once and matches its closed form") {
  const ClusterSpec a2 = testing::ShippedCluster("atlas800t-a2-910b");
  const auto members = Strided(8, 1);
  const GroupPlacement server = PlaceGroup(members, a2);
  std::vector<std::vector<Phase>> runs;
  std::vector<double> closed;
  const Collective all[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                            Collective::kBroadcast, Collective::kAllToAll};
  for (const Collective c : all) {
    runs.push_back(ExpandCollective(c, CollectiveAlgorithm::kFullMesh, 1 << 28, members, 8, Fidelity::kAggregated));
    closed.push_back(CollectiveSeconds(c, CollectiveAlgorithm::kFullMesh, 1 << 28, server, a2));
  }
  CHECK(runs[0].size() == 2);               // reduce-scatter, then all-gather
  CHECK(runs[0][0].flows.size() == 8 * 7);  // every ordered pair
  const std::vector<double> t = SimulateInTurn(a2, 8, runs);
  for (size_t i = 0; i < t.size(); ++i) {
    INFO(ToString(all[i]));
    CHECK(t[i] == Approx(closed[i]).epsilon(0.01));
  }
}

TEST_CASE("hierarchical AllReduce over 4096 Ascend devices matches its closed form") {
  const ClusterSpec cluster = testing::ShippedCluster("ascend910-atlas900");
  const auto members = Strided(4096, 1);
  const double bytes = 1 << 30;
  const auto t = Simulate(cluster, 4096,
                          {ExpandCollective(Collective::kAllReduce, CollectiveAlgorithm::kHierarchical, bytes, members,
                                            8, Fidelity::kAggregated)});
  const double closed = CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kHierarchical, bytes,
                                          PlaceGroup(members, cluster), cluster);
  CHECK(t[0] == Approx(closed).epsilon(0.01));
}

TEST_CASE("HCCL's hierarchical collectives over Atlas A2 servers run their server level as the mesh") {
  const ClusterSpec a2 = testing::ShippedCluster("atlas800t-a2-910b");
  const auto members = Strided(32, 1);  // 4 servers of 8
  const GroupPlacement placement = PlaceGroup(members, a2);
  std::vector<std::vector<Phase>> runs;
  std::vector<double> closed;
  const Collective all[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter};
  for (const Collective c : all) {
    const CollectiveTiming t = TimeCollective(c, CollectiveAlgorithm::kHierarchical, 1 << 28, placement, a2);
    runs.push_back(
        ExpandCollective(c, CollectiveAlgorithm::kHierarchical, 1 << 28, members, 8, Fidelity::kAggregated, t.library));
    closed.push_back(t.seconds);
  }
  CHECK(runs[0].front().flows.size() == 4 * 8 * 7);  // every ordered pair on each server
  const std::vector<double> t = SimulateInTurn(a2, 32, runs);
  for (size_t i = 0; i < t.size(); ++i) {
    INFO(ToString(all[i]));
    CHECK(t[i] == Approx(closed[i]).epsilon(0.02));
  }
}

TEST_CASE("two rings over the same cross-group path share its bandwidth") {
  const ClusterSpec cluster = testing::ShippedCluster("ascend910-atlas900");
  const double bytes = 256 << 20;
  const std::vector<int64_t> a = {0, 4}, b = {1, 5};
  const auto both = Simulate(
      cluster, 8,
      {ExpandCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes, a, 8, Fidelity::kAggregated),
       ExpandCollective(Collective::kAllReduce, CollectiveAlgorithm::kRing, bytes, b, 8, Fidelity::kAggregated)});
  // Each 2-member ring moves 2(n-1)/n S = S per member over the 32 GB/s
  // path between the HCCS groups, which both rings' flows share: S / 16 GB/s.
  const double shared = bytes / (cluster.intra_server.cross_group_bandwidth / 2) + 2 * cluster.intra_server.latency;
  CHECK(both[0] == Approx(shared).epsilon(0.01));
  CHECK(both[1] == Approx(shared).epsilon(0.01));
}

TEST_CASE("a group spread unevenly over servers expands into flows between its own members only") {
  // Five members: three on server 0, two on server 1 (8 devices per server).
  const std::vector<int64_t> members = {4, 5, 6, 8, 9};
  for (const CollectiveAlgorithm a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kHierarchical,
                                      CollectiveAlgorithm::kHalvingDoubling, CollectiveAlgorithm::kDoubleBinaryTree})
    for (const Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter})
      for (const Fidelity f : {Fidelity::kAggregated, Fidelity::kStep}) {
        INFO(static_cast<int>(a) << " " << static_cast<int>(c) << " " << static_cast<int>(f));
        const std::vector<Phase> phases = ExpandCollective(c, a, 1 << 20, members, 8, f);
        REQUIRE(!phases.empty());
        for (const Phase& p : phases)
          for (const auto& flow : p.flows) {
            CHECK(std::count(members.begin(), members.end(), flow.src) == 1);
            CHECK(std::count(members.begin(), members.end(), flow.dst) == 1);
          }
      }
}

}  // namespace
}  // namespace shardlab::sim

#include "core/analytical/analytical_engine.h"
#include "core/config/software_stack.h"
#include "core/flow/prepared_run.h"
#include "core/plan/stage_passes.h"
#include "core/report/step_result.h"
#include "sim/step_engine.h"

namespace shardlab::sim {
namespace {

TEST_CASE("the SimGrid step of an uncontended pipeline run matches the analytical engine") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
  run.model.params.Set("layers", int64_t{4});
  // Whole accumulated gradients: no data-parallel ReduceScatter shares the NICs with the pipeline's sends.
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = false;
  const Plan plan = Prepare(run).plan;
  SimGridStats stats;
  const StepResult simulated = Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold,
                                                          TraceRequest{true, {0, 256}}, &stats));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  CHECK(simulated.engine == "simgrid");
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.01));
  CHECK(simulated.bubble_fraction == Approx(analytical.bubble_fraction).epsilon(0.05));
  CHECK(stats.flows > 0);
  // Forward and backward of every micro-batch on both stages are on the timeline.
  int passes = 0;
  for (const auto& e : simulated.events) passes += e.IsPass();
  CHECK(passes == 2 * 2 * 8);
}

// LLaMA-2 70B on 1024 H100 (16 layers) with optimizer_level level3, each
// layer's weights gathered in one AllGather.
RunSpec Llama70bLayerGathers() {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.model.params.Set("layers", int64_t{16});
  run.parallel.parallel_optimizer_config.optimizer_level = OptimizerLevel::kLevel3;
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = false;
  run.stack.weight_gather = WeightGather::kLayer;
  return run;
}

TEST_CASE("SimGrid runs prefetched layer gathers as flows beside the passes and agrees with the analytical engine") {
  RunSpec run = Llama70bLayerGathers();
  const Plan plan = Prepare(run).plan;
  int prefetches = 0;
  for (const Task& t : plan.stages[0].forward) prefetches += t.prefetch;
  REQUIRE(prefetches > 0);
  SimGridStats stats;
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}, &stats));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  CHECK(stats.flows > 0);
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.02));
  // The gathers are data-parallel communication, mostly hidden.
  bool hidden = false;
  for (const DimensionCommunication& c : analytical.stages[0].communication)
    if (c.dimension == CommDimension::kData) hidden = c.exposed_seconds < 0.5 * c.seconds;
  CHECK(hidden);
}

TEST_CASE("under virtual pipeline chunks layer gathers overlap within their chunk, alike on both engines") {
  RunSpec run = Llama70bLayerGathers();
  run.simulation.pipeline_schedule = PipelineSchedule::kInterleaved;
  run.simulation.virtual_pipeline_chunks = 2;
  const Plan plan = Prepare(run).plan;
  REQUIRE(plan.chunks == 2);
  // Each chunk runs as its own pass: no gather may wait in one chunk for the compute of another.
  int gathers = 0;
  for (const Task& t : plan.stages[0].forward)
    if (t.name.find("weight_gather") != std::string::npos) {
      ++gathers;
      CHECK_FALSE(t.prefetch);
      CHECK(t.prefetches_needed == 0);
    }
  CHECK(gathers > 1);
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  // Both engines run each chunk's share of the tasks as a pass of its own.
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.01));
}

TEST_CASE("dualpipe's two directions and its exchange with the mirror stage run alike on both engines") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.simulation.pipeline_schedule = PipelineSchedule::kDualPipe;
  run.simulation.virtual_pipeline_chunks = 2;
  const Plan plan = Prepare(run).plan;
  SimGridStats stats;
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}, &stats));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  CHECK(stats.flows > 0);
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.01));
  // Each stage sends its gradients to its mirror as the mirror's come back, then updates.
  for (const StepResult* r : {&simulated, &analytical}) {
    INFO(r->engine);
    int exchanges = 0;
    for (const TraceEvent& e : r->events)
      if (e.kind == EventKind::kGradient && e.name == "gradients with stage " + std::to_string(3 - e.stage)) {
        ++exchanges;
        CHECK(e.duration >= plan.stages[static_cast<size_t>(e.stage)].mirror_gradient_seconds * 0.999);
      }
    CHECK(exchanges == 4);
  }
}

TEST_CASE("ZB-H1 splits every backward into input- and weight-gradient passes, alike on both engines") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  const Plan one_f_one_b = Prepare(run).plan;
  run.simulation.pipeline_schedule = PipelineSchedule::kZeroBubbleH1;
  const Plan plan = Prepare(run).plan;
  // Half of each trained product's backward FLOPs move to the weight-gradient pass.
  auto flops = [](const std::vector<Task>& tasks) {
    double sum = 0;
    for (const Task& t : tasks) sum += t.flops;
    return sum;
  };
  const StageProgram& split = plan.stages[1];
  REQUIRE(split.splits_backward);
  CHECK(flops(split.backward) + flops(split.weight_gradient) == Approx(flops(one_f_one_b.stages[1].backward)));
  CHECK(flops(split.weight_gradient) > 0.3 * flops(split.backward));
  for (const Task& t : split.weight_gradient) CHECK(t.kind == Task::Kind::kCompute);
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  const StepResult baseline = Summarize(one_f_one_b, RunAnalytical(one_f_one_b));
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.01));
  // The stages after the first hand back their input gradients sooner: stage 0 waits less.
  CHECK(analytical.step_seconds < baseline.step_seconds);
  CHECK(simulated.stages[0].bubble_seconds < 0.8 * baseline.stages[0].bubble_seconds);
  std::map<int64_t, int> weight_passes;  // per stage
  for (const TraceEvent& e : simulated.events)
    if (e.kind == EventKind::kWeightGradient) ++weight_passes[e.stage];
  CHECK(weight_passes == std::map<int64_t, int>{{0, 32}, {1, 32}, {2, 32}, {3, 32}});
}

TEST_CASE("zero_bubble_v runs its V on both engines alike, the turn without a transfer") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.simulation.pipeline_schedule = PipelineSchedule::kZeroBubbleV;
  const Plan plan = Prepare(run).plan;
  REQUIRE(plan.chunks == 2);
  const StepResult simulated = Summarize(
      plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{.enabled = true}));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.01));
  // Each stage sends each micro-batch's activations on twice (once per arm) and their gradients back
  // twice, less the V's turn on the last stage and its two ends (stage 0's first forward input, its loss).
  std::map<int64_t, int> sends;
  for (const TraceEvent& e : simulated.events)
    if (e.kind == EventKind::kSend) ++sends[e.stage];
  const int m = static_cast<int>(plan.micro_batches);
  CHECK(sends == std::map<int64_t, int>{{0, 2 * m}, {1, 4 * m}, {2, 4 * m}, {3, 2 * m}});
}

// `plan` with every collective's compute share zeroed: nothing slows the compute beside it.
Plan WithoutContention(Plan plan) {
  for (StageProgram& stage : plan.stages) {
    for (auto* tasks : {&stage.step_start, &stage.forward, &stage.backward, &stage.weight_gradient})
      for (Task& t : *tasks) t.compute_share = 0;
    for (GradientBucket& b : stage.buckets) b.compute_share = 0;
  }
  return plan;
}

TEST_CASE("NCCL's kernels slow the compute beside them alike on both engines") {
  // LLaMA-2 70B on 1024 H100 as Megatron runs it (8 layers): gradient
  // ReduceScatters beside the last backward, parameter AllGathers beside the
  // first forward.
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.model.params.Set("layers", int64_t{8});
  run.parallel.micro_batch_num = 8;
  run.parallel.global_batch_size = 256;
  run.stack = PresetStack(StackPreset::kMegatron);
  run.stack.overlap_grad_reduce = run.stack.overlap_param_gather = true;
  const Plan plan = Prepare(run).plan;
  const StageProgram& stage = plan.stages[0];
  REQUIRE(!stage.buckets.empty());
  REQUIRE(stage.GathersOverlapForward());
  // A data-parallel group has one GPU per server: NCCL's rings leave on that
  // GPU's NIC, 1 channel doubled: 2 CTAs of 132 SMs.
  double largest = 0;
  for (const GradientBucket& b : stage.buckets) largest = std::max(largest, b.compute_share);
  CHECK(largest == Approx(2.0 / 132));
  const double held = BucketContentionSeconds(stage, 1, true), gathers = stage.GatherContentionSeconds();
  // Every stage's first forward and last backward slowed, one after another along the pipeline.
  double chain = 0;
  for (const StageProgram& st : plan.stages)
    chain += st.GatherContentionSeconds() + BucketContentionSeconds(st, 1, true);
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  const StepResult quiet = Summarize(plan, RunAnalytical(WithoutContention(plan)));
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}));
  INFO("step " << quiet.step_seconds << " s without contention, " << analytical.step_seconds << " s analytical, "
               << simulated.step_seconds << " s SimGrid; buckets hold back " << held << " s, gathers " << gathers
               << " s");
  // Stage 0's first forward ends `gathers` later and its last backward
  // `held` later, after the later stages' passes, each slowed by its own
  // gathers and buckets, handed it their outputs.
  CHECK(analytical.step_seconds - quiet.step_seconds > held + gathers);
  CHECK(analytical.step_seconds - quiet.step_seconds <= chain * (1 + 1e-9));
  CHECK(analytical.compute_seconds > quiet.compute_seconds);
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.02));
}

TEST_CASE("overlapped forward-backward units hide expert AlltoAlls between servers on both engines alike") {
  // Qwen3-235B-A22B as Megatron-Bridge runs it on 256 H100 (expert parallel 32 over 4 servers, tensor
  // parallel 2 with sequence parallelism), shortened; Megatron's combined 1F1B overlaps the expert AlltoAlls.
  const std::string file = testing::SourcePath("configs/validation/bridge-qwen3-235b-a22b-h100.json");
  std::ifstream in(file);
  const testing::Doc doc(nlohmann::json::parse(in).at("run").dump(), file);
  RunSpec run = ReadRunSpec(doc.root());
  run.model.params.Set("layers", int64_t{32});
  run.parallel.micro_batch_num = 64;
  run.parallel.global_batch_size = 1024;
  run.model.params.Set("batch", run.parallel.micro_batch_size());
  run.simulation.overlap_forward_backward.clear();
  const Plan serial = Prepare(run).plan;
  run.simulation.overlap_forward_backward = {CommDimension::kExpert};
  const Plan plan = Prepare(run).plan;
  REQUIRE(plan.overlap_forward_backward == PassOverlap{{CommDimension::kExpert}, {}});
  const StepResult simulated = Summarize(
      plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{.enabled = true}));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  const StepResult one_at_a_time = Summarize(serial, RunAnalytical(serial));
  // As one pass at a time, SimGrid's AlltoAlls contend on the NICs and leaf uplinks (3.4% longer on the
  // whole run), and a unit's two sends share the link between its stages; the analytical engine's do not.
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.08));
  auto exposed = [](const StepResult& r, CommDimension dimension) {
    for (const auto& c : r.stages[0].communication)
      if (c.dimension == dimension) return c.exposed_seconds;
    return 0.0;
  };
  INFO("expert AlltoAlls exposed: " << exposed(one_at_a_time, CommDimension::kExpert) << " s one pass at a time, "
                                    << exposed(analytical, CommDimension::kExpert) << " s analytical, "
                                    << exposed(simulated, CommDimension::kExpert) << " s SimGrid; tensor parallel "
                                    << exposed(one_at_a_time, CommDimension::kTensor) << " s and "
                                    << exposed(analytical, CommDimension::kTensor) << " s");
  CHECK(exposed(analytical, CommDimension::kExpert) < 0.8 * exposed(one_at_a_time, CommDimension::kExpert));
  CHECK(exposed(simulated, CommDimension::kExpert) < 0.8 * exposed(one_at_a_time, CommDimension::kExpert));
  // The tensor-parallel collectives still block (only the expert dimension overlaps).
  CHECK(exposed(analytical, CommDimension::kTensor) ==
        Approx(exposed(one_at_a_time, CommDimension::kTensor)).epsilon(0.02));
  CHECK(analytical.step_seconds < one_at_a_time.step_seconds);
  // A unit's two passes on the timeline: the second starts as the first ends, every pass once.
  int passes = 0, adjacent = 0;
  const TraceEvent* before = nullptr;
  for (const TraceEvent& e : simulated.events) {
    if (e.stage != 0 || !e.IsPass()) continue;
    ++passes;
    if (before && before->kind != e.kind && e.start == Approx(before->end())) ++adjacent;
    before = &e;
  }
  CHECK(passes == 2 * 64 * static_cast<int>(plan.chunks));
  CHECK(adjacent > 0);
}

TEST_CASE(
    "SimGrid runs gradient_accumulation_shard's ReduceScatters after every micro-batch, as the analytical engine") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
  run.model.params.Set("layers", int64_t{4});
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = true;
  const Plan plan = Prepare(run).plan;
  const Trace simulated = RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{});
  const Trace analytical = RunAnalytical(plan);
  // One SimGrid run per process: compare each micro-batch's runs with the analytical engine's.
  auto per_micro_batch = [](const Trace& trace) {
    std::map<int64_t, int> runs;
    for (const TraceEvent& e : trace.events)
      if (e.stage == 0 && e.kind == EventKind::kGradient && e.micro_batch >= 0) ++runs[e.micro_batch];
    return runs;
  };
  const auto in_simgrid = per_micro_batch(simulated);
  REQUIRE(in_simgrid.size() == static_cast<size_t>(plan.micro_batches));
  CHECK(in_simgrid == per_micro_batch(analytical));
  // SimGrid's flows also contend with the pipeline's sends on the NICs.
  CHECK(Summarize(plan, simulated).step_seconds == Approx(Summarize(plan, analytical).step_seconds).epsilon(0.03));
}

TEST_CASE("SimGrid traces global_rank's device and reads its stage's figures from it") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
  run.model.params.Set("layers", int64_t{4});
  run.parallel.global_rank = 300;  // stage 1 (ranks 256..511), server 37
  const Plan plan = Prepare(run).plan;
  const Trace trace = RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{});
  bool focus = false, first_of_stage = false;
  for (const TraceEvent& e : trace.events) {
    if (e.stage != 1 || !e.IsPass()) continue;
    focus = focus || std::count(e.ranks.begin(), e.ranks.end(), 300) > 0;
    first_of_stage = first_of_stage || std::count(e.ranks.begin(), e.ranks.end(), 256) > 0;
  }
  CHECK(focus);
  CHECK_FALSE(first_of_stage);  // an untraced device: only the representatives are, without a trace request
  const StepResult step = Summarize(plan, trace);
  CHECK(step.stages[1].forward_seconds > 0);
}

TEST_CASE("the SimGrid step of an interleaved run matches the analytical engine") {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/pangu-alpha-13b-ascend-512.json"));
  run.model.params.Set("layers", int64_t{4});
  run.parallel.parallel_optimizer_config.gradient_accumulation_shard = false;
  run.parallel.micro_batch_interleaved = 2;
  const Plan plan = Prepare(run).plan;
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.01));
  CHECK(simulated.stages[0].exposed_communication_seconds ==
        Approx(analytical.stages[0].exposed_communication_seconds).epsilon(0.05));
}

TEST_CASE("interleaving with micro_batch_num not a multiple of pipeline_stages runs through on both engines") {
  // 5 micro-batches over 4 stages in 3 chunks: a first group of 5, as MindSpore groups them (with groups
  // of 4 and a partial last one this order deadlocked).
  const nlohmann::json doc = {{"name", "gpt-interleaved-remainder"},
                              {"cluster", testing::SourcePath("configs/clusters/dgx-a100-hdr.json")},
                              {"model", testing::SourcePath("configs/models/gpt3-175b.json")},
                              {"model_params", {{"layers", 12}, {"data_parallel", 1}, {"model_parallel", 1}}},
                              {"parallel",
                               {{"parallel_mode", "semi_auto_parallel"},
                                {"device_num", 4},
                                {"pipeline_stages", 4},
                                {"micro_batch_num", 5},
                                {"global_batch_size", 5}}},
                              {"simulation", {{"pipeline_schedule", "interleaved"}, {"virtual_pipeline_chunks", 3}}}};
  RunSpec run = ReadRunSpec(JsonNode(doc, "remainder.json"));
  const StepResult one_at_a_time = Summarize(Prepare(run).plan, RunAnalytical(Prepare(run).plan));
  CHECK(one_at_a_time.step_seconds > 0);
  // Overlapped, every unit waits for both its inputs; SimGrid (once per process) runs that.
  run.simulation.overlap_forward_backward = {CommDimension::kTensor};
  const Plan plan = Prepare(run).plan;
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.1));
  // One device per stage has no tensor collective to hide: pairing only costs the extra warm-up forward.
  CHECK(analytical.step_seconds == Approx(one_at_a_time.step_seconds).epsilon(0.05));
}

TEST_CASE("a sequence-pipelined step (seqpipe, 8 chunks per sequence) runs the same on both engines") {
  const RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/qwen2.5-72b-32k-ascend-64.json"));
  const Plan plan = Prepare(run).plan;
  REQUIRE(plan.seq_chunks == 8);
  const StepResult simulated =
      Summarize(plan, RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}));
  const StepResult analytical = Summarize(plan, RunAnalytical(plan));
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.01));
  CHECK(simulated.bubble_seconds == Approx(analytical.bubble_seconds).epsilon(0.05));
}

TEST_CASE("SimGrid simulates a step whose data-parallel size does not divide a server (dp 3 on 12 A100)") {
  // Stage 1 holds ranks 6..11: its data-parallel groups straddle two servers unevenly.
  const nlohmann::json doc = {{"name", "gpt-a100-12-dp3"},
                              {"cluster", testing::SourcePath("configs/clusters/dgx-a100-hdr.json")},
                              {"model", testing::SourcePath("configs/models/gpt3-175b.json")},
                              {"model_params", {{"layers", 4}, {"data_parallel", 3}, {"model_parallel", 2}}},
                              {"parallel",
                               {{"parallel_mode", "semi_auto_parallel"},
                                {"device_num", 12},
                                {"pipeline_stages", 2},
                                {"micro_batch_num", 2},
                                {"global_batch_size", 12}}}};
  const PreparedRun prepared = Prepare(ReadRunSpec(JsonNode(doc, "dp3.json")));
  const StepResult simulated = Summarize(
      prepared.plan,
      RunSimGrid(prepared.plan, prepared.run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}));
  const StepResult analytical = Summarize(prepared.plan, RunAnalytical(prepared.plan));
  CHECK(simulated.step_seconds > 0);
  CHECK(simulated.step_seconds == Approx(analytical.step_seconds).epsilon(0.2));
}

TEST_CASE("SimGrid refuses a step whose task count passes its limit while every shipped run is within it") {
  for (const auto& entry : std::filesystem::directory_iterator(testing::SourcePath("configs/runs"))) {
    INFO(entry.path().filename().string());
    CHECK(TaskRunsPerStep(Prepare(LoadRunFile(entry.path().string())).plan) <= kMaxSimGridTaskRuns);
  }
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/gpt3-175b-ascend-4096.json"));
  run.parallel.micro_batch_num = 512;
  run.parallel.global_batch_size = 512 * 64;
  run.model.params.Set("batch", run.parallel.micro_batch_size());
  const Plan plan = Prepare(run).plan;
  // Refused before the engine starts (no SimGrid engine is created).
  CHECK_THROWS_WITH(RunSimGrid(plan, run.cluster, Fidelity::kAggregated, Symmetry::kFold, TraceRequest{}),
                    Catch::Contains("x 512 micro-batches") && Catch::Contains("SimGrid engine's limit of 3000000"));
}

TEST_CASE("an AlltoAll over servers runs rail by rail as NCCL's PXN routes it") {
  // 64 members, 8 on each of 8 servers: each sends over NVLink to the 7 others
  // of its server (its data for them and for their rails' remote members) and
  // one flow to the member on its rail of each of the 7 other servers.
  const std::vector<int64_t> members = Strided(64, 1);
  const double bytes = 64 << 20;  // each member's buffer: 1 MiB for each peer
  const std::vector<Phase> phases =
      ExpandCollective(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, bytes, members, 8, Fidelity::kAggregated);
  REQUIRE(phases.size() == 1);
  CHECK(phases[0].flows.size() == 64 * (7 + 7));
  CHECK(AllToAllFlowsPerMember(CollectiveAlgorithm::kPairwise, members, 8) == 14);
  double nvlink = 0, rails = 0;
  for (const Flow& f : phases[0].flows) {
    if (f.src / 8 == f.dst / 8) {
      nvlink += f.bytes;
      CHECK(f.bytes == Approx(8 * (1 << 20)));  // its data for the peer and for the peer's 7 remote rail members
    } else {
      rails += f.bytes;
      CHECK(f.src % 8 == f.dst % 8);            // on one rail
      CHECK(f.bytes == Approx(8 * (1 << 20)));  // the source server's 8 members' data for the destination
    }
  }
  // Across servers, exactly what leaves each server; inside them, what leaves each member for its own server
  // and what it hands a peer to send on.
  CHECK(rails == Approx(64.0 * 56 * (1 << 20)));
  CHECK(nvlink == Approx(64.0 * 7 * 8 * (1 << 20)));
  // One server, or more than 64 members: as before (every peer, or the opposite member).
  CHECK(AllToAllFlowsPerMember(CollectiveAlgorithm::kPairwise, Strided(8, 1), 8) == 7);
  CHECK(AllToAllFlowsPerMember(CollectiveAlgorithm::kPairwise, Strided(128, 1), 8) == 1);
  CHECK(AllToAllFlowsPerMember(CollectiveAlgorithm::kFullMesh, members, 8) == 63);
  // Members on other slots of each server (slots 0 and 3, then 1 and 4) share no rails: every peer its flow.
  CHECK(AllToAllFlowsPerMember(CollectiveAlgorithm::kPairwise, {0, 3, 9, 12}, 8) == 3);
  // The same slots listed in another order on one server still pair by rail.
  const std::vector<Phase> shuffled = ExpandCollective(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, 4 << 20,
                                                       {0, 3, 11, 8}, 8, Fidelity::kAggregated);
  for (const Flow& f : shuffled[0].flows)
    if (f.src / 8 != f.dst / 8) CHECK(f.src % 8 == f.dst % 8);
}

}  // namespace
}  // namespace shardlab::sim
