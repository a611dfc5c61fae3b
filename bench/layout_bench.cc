// Speed of the layout engine at 4096 devices: redistribution planning for
// layout pairs of the sizes large runs produce, operator layout inference and
// strategy enumeration. Prints Google Benchmark's table.
#include <benchmark/benchmark.h>

#include "core/graph/shape_inference.h"
#include "core/layout/redistribution.h"
#include "core/ops/op_layout.h"

namespace shardlab {
namespace {

struct Pair {
  TensorLayout from, to;
};

const Pair kPairs[] = {
    // Data x model parallel activations gathered over the model-parallel group.
    {TensorLayout({512, 8}, {1, 0}, {131072, 12288}), TensorLayout({512, 8}, {1, -1}, {131072, 12288})},
    // Arrangements that must be unified: [64,64] rows x columns into 4096 row slices.
    {TensorLayout({64, 64}, {1, 0}, {65536, 12288}), TensorLayout({4096}, {0, -1}, {65536, 12288})},
    // Three-level arrangement into a transposed split, with a Reshape between.
    {TensorLayout({8, 4, 128}, {2, 0}, {4096, 8192}), TensorLayout({16, 256}, {0, 1, -1}, {4096, 2048, 4})},
};

void BM_PlanRedistribution(benchmark::State& state) {
  const Pair& pair = kPairs[state.range(0)];
  const bool alltoall = state.range(1) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(PlanRedistribution(pair.from, pair.to, alltoall, 2));
  state.SetLabel(std::to_string(PlanRedistribution(pair.from, pair.to, alltoall, 2).ops.size()) + " ops");
}
BENCHMARK(BM_PlanRedistribution)->ArgsProduct({{0, 1, 2}, {0, 1}})->Unit(benchmark::kMicrosecond);

Operator MatMul() {
  Operator op;
  op.name = "mm";
  op.type = "MatMul";
  op.attrs = {{"transpose_a", false}, {"transpose_b", true}};
  return op;
}

void BM_InferMatMulLayout4096(benchmark::State& state) {
  const Operator op = MatMul();
  const std::vector<TensorType> in = {{{131072, 12288}, DType::kFloat16}, {{49152, 12288}, DType::kFloat16}};
  const auto out = InferOutputs(op, in);
  for (auto _ : state) benchmark::DoNotOptimize(InferOpLayout(op, in, out, {{512, 1}, {8, 1}}, 4096, {1}));
}
BENCHMARK(BM_InferMatMulLayout4096)->Unit(benchmark::kMicrosecond);

void BM_EnumerateMatMulStrategies4096(benchmark::State& state) {
  const Operator op = MatMul();
  const std::vector<TensorType> in = {{{131072, 12288}, DType::kFloat16}, {{49152, 12288}, DType::kFloat16}};
  const auto out = InferOutputs(op, in);
  size_t count = 0;
  for (auto _ : state) count = EnumerateStrategies(op, in, out, 4096, true).size();
  state.SetLabel(std::to_string(count) + " strategies");
}
BENCHMARK(BM_EnumerateMatMulStrategies4096)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardlab

BENCHMARK_MAIN();
