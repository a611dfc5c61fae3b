// Speed of the simulation pipeline on the shipped 4096-device GPT-3 175B run:
// building the graph, laying out every operator, lowering to the plan, and one
// run of the analytical engine. Prints Google Benchmark's table.
#include <benchmark/benchmark.h>

#include "core/analytical/analytical_engine.h"
#include "core/config/run_config.h"
#include "core/ops/graph_layouts.h"
#include "core/plan/lowering.h"

namespace shardlab {
namespace {

const RunSpec& Gpt3Run() {
  static const RunSpec run = LoadRunFile(std::string(SHARDLAB_SOURCE_DIR) + "/configs/runs/gpt3-175b-ascend-4096.json");
  return run;
}

void BM_BuildGraph(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(BuildRunGraph(Gpt3Run()));
}
BENCHMARK(BM_BuildGraph)->Unit(benchmark::kMillisecond);

void BM_LayOutOperators(benchmark::State& state) {
  const Graph graph = BuildRunGraph(Gpt3Run());
  for (auto _ : state) benchmark::DoNotOptimize(InferGraphLayouts(graph, Gpt3Run().parallel.devices_per_stage()));
}
BENCHMARK(BM_LayOutOperators)->Unit(benchmark::kMillisecond);

void BM_LowerToPlan(benchmark::State& state) {
  const Graph graph = BuildRunGraph(Gpt3Run());
  const auto layouts = InferGraphLayouts(graph, Gpt3Run().parallel.devices_per_stage());
  for (auto _ : state) benchmark::DoNotOptimize(LowerToPlan(Gpt3Run(), graph, layouts));
}
BENCHMARK(BM_LowerToPlan)->Unit(benchmark::kMillisecond);

void BM_AnalyticalEngine(benchmark::State& state) {
  const Graph graph = BuildRunGraph(Gpt3Run());
  const Plan plan = LowerToPlan(Gpt3Run(), graph, InferGraphLayouts(graph, Gpt3Run().parallel.devices_per_stage()));
  for (auto _ : state) benchmark::DoNotOptimize(RunAnalytical(plan, false));
}
BENCHMARK(BM_AnalyticalEngine)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardlab

BENCHMARK_MAIN();
