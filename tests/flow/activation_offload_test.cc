// Activation offloading (cpu_offloading_num_layers) through the whole flow on
// the shipped LLaMA-2 70B run without recompute: the first layers of each
// stage keep their activations in host memory, copied out beside the next
// layer's forward and back beside the next layer's backward.
#include <catch2/catch.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Llama70b(int64_t offloaded_layers) {
  RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  run.parallel.recompute = false;
  run.parallel.cpu_offloading_num_layers = offloaded_layers;
  return run;
}

std::vector<const Task*> Copies(const std::vector<Task>& tasks, const std::string& direction) {
  std::vector<const Task*> out;
  for (const Task& t : tasks)
    if (t.pcie_copy && t.name.find("/offload." + direction) != std::string::npos) out.push_back(&t);
  return out;
}

TEST_CASE("offloaded layers keep their activations in host memory, copied out and back once per micro-batch") {
  const PreparedRun kept = Prepare(Llama70b(0)), offloaded = Prepare(Llama70b(10));
  const StageProgram &a = kept.plan.stages[1], &b = offloaded.plan.stages[1];  // 20 layers, 10 offloaded
  const auto out = Copies(b.forward, "device_to_host");
  const auto back = Copies(b.backward, "host_to_device");
  REQUIRE(out.size() == 10);
  REQUIRE(back.size() == 10);
  CHECK(Copies(a.forward, "device_to_host").empty());
  // Every layer keeps the same bytes: the stage's activations over its 20 layers (and a
  // little more: the stage's first layer also keeps what the previous stage sent it).
  const double layer = out.front()->bytes;
  CHECK(layer > 0);
  CHECK(a.memory.activations_per_micro_batch == Approx(20 * layer).epsilon(0.01));
  for (const Task* t : out) {
    CHECK(t->overlapped);
    CHECK(t->bytes == Approx(layer).epsilon(0.01));
    CHECK(t->seconds == Approx(t->bytes / 64e9 + 2e-6).epsilon(1e-9));  // the DGX H100's PCIe 5.0 x16: 64 GB/s, 2 us
  }
  // Each copy back goes out beside the backward of the layer after it, and
  // the offloaded layer's own backward waits for it.
  int waits = 0;
  for (const Task& t : b.backward) waits += t.after_host_copies;
  CHECK(waits == 10);
  // Device memory: 10 layers fewer per micro-batch in flight, two layers'
  // worth for the one computing and the one copying; the rest on the host.
  const double in_flight = a.memory.micro_batches_in_flight;
  CHECK(b.memory.activations_per_micro_batch == Approx(a.memory.activations_per_micro_batch - 10 * layer).epsilon(0.01));
  CHECK(b.memory.activations == Approx(a.memory.activations - 10 * layer * in_flight + 2 * layer).epsilon(0.01));
  CHECK(b.memory.host - a.memory.host == Approx(10 * layer * in_flight).epsilon(0.01));
  CHECK(b.memory.peak < a.memory.peak);
  // One layer offloaded: the layer computing beside its copy is a kept one, already counted.
  const PreparedRun one_layer = Prepare(Llama70b(1));
  const StageProgram& one = one_layer.plan.stages[1];
  CHECK(one.memory.activations == Approx(a.memory.activations - layer * in_flight + layer).epsilon(0.01));
}

TEST_CASE("offload copies hide behind the next layer's compute unless the host link is too slow") {
  auto step = [](const RunSpec& run) {
    const PreparedRun p = Prepare(run);
    return Summarize(p.plan, RunAnalytical(p.plan)).step_seconds;
  };
  const double without = step(Llama70b(0));
  // At the DGX H100's 64 GB/s each layer's 2.8 ms copy hides behind the next
  // layer's 2.5 ms forward (and the copy stream catches up on the layers kept)
  // and 4 ms backward; run on the compute stream, the copies would add a third.
  const PreparedRun offloaded = Prepare(Llama70b(10));
  double copies = 0;
  for (const auto* pass : {&offloaded.plan.stages[1].forward, &offloaded.plan.stages[1].backward})
    for (const Task& t : *pass) copies += t.pcie_copy ? t.seconds : 0;
  copies *= static_cast<double>(offloaded.plan.micro_batches);
  CHECK(copies > 0.3 * without);
  CHECK(Summarize(offloaded.plan, RunAnalytical(offloaded.plan)).step_seconds == Approx(without).epsilon(0.001));
  // At 1 GB/s the copies set the pace: 2 x 10 copies per micro-batch, one after another.
  RunSpec slow = Llama70b(10);
  slow.cluster.host.pcie_bandwidth = 1e9;
  const PreparedRun p = Prepare(slow);
  const double copy = Copies(p.plan.stages[1].forward, "device_to_host").front()->seconds;
  CHECK(step(slow) > without + 0.5 * 20 * copy * static_cast<double>(p.plan.micro_batches));
}

TEST_CASE("activation offloading refuses operators marked for recompute and stages it would empty") {
  RunSpec run = Llama70b(10);
  run.parallel.recompute = true;
  CHECK_THROWS_WITH(Prepare(run), Catch::Contains("is marked both recompute and offload_activations"));
  CHECK_THROWS_WITH(Prepare(Llama70b(20)),
                    Catch::Contains("cpu_offloading_num_layers 20 offloads every layer of pipeline stage 0 (20 layers)"));
}

}  // namespace
}  // namespace shardlab
