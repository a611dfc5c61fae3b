// Speed of the simulation pipeline on the shipped 4096-device GPT-3 175B run:
// building the graph, choosing every operator's strategy, lowering to the
// plan, the whole of Prepare, and one run of the analytical engine. Prints
// Google Benchmark's table.
#include <benchmark/benchmark.h>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/plan/lowering.h"
#include "core/search/choose_strategies.h"

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

void BM_ChooseStrategies(benchmark::State& state) {
  const Graph graph = BuildRunGraph(Gpt3Run());
  for (auto _ : state) benchmark::DoNotOptimize(ChooseStrategies(Gpt3Run(), graph));
}
BENCHMARK(BM_ChooseStrategies)->Unit(benchmark::kMillisecond);

void BM_LowerToPlan(benchmark::State& state) {
  const ShardedGraph sharded = ChooseStrategies(Gpt3Run(), BuildRunGraph(Gpt3Run()));
  for (auto _ : state) benchmark::DoNotOptimize(LowerToPlan(Gpt3Run(), sharded));
}
BENCHMARK(BM_LowerToPlan)->Unit(benchmark::kMillisecond);

void BM_Prepare(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Prepare(Gpt3Run()));
}
BENCHMARK(BM_Prepare)->Unit(benchmark::kMillisecond);

void BM_AnalyticalEngine(benchmark::State& state) {
  const Plan plan = Prepare(Gpt3Run()).plan;
  for (auto _ : state) benchmark::DoNotOptimize(RunAnalytical(plan));
}
BENCHMARK(BM_AnalyticalEngine)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardlab

BENCHMARK_MAIN();
