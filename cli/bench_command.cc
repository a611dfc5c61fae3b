// `shardlab bench collectives|gemm`: the micro-benchmarks on real hardware,
// printed like nccl-tests (collectives) or as achieved FLOP/s and efficiency
// per shape (GEMMs), and written as measurements for `shardlab calibrate`.
#include <algorithm>
#include <functional>
#include <iostream>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "core/util/atomic_file.h"
#include "exec/micro_benchmarks.h"

namespace shardlab::cli {
namespace {

void Emit(const BenchArgs& args, const nlohmann::json& measurements, const std::string& table) {
  if (args.json)
    std::cout << measurements.dump(2) << "\n";
  else
    std::cout << table;
  if (!args.out_file.empty()) WriteFileAtomically(args.out_file, measurements.dump(2) + "\n");
}

// Runs `part` on every rank, showing rank 0's progress; returns each rank's
// part and sets `device` to the ranks' device.
std::vector<std::string> RunBenchmark(const exec::LaunchOptions& launch, const std::string& what,
                                      const std::function<std::string(exec::RankContext&)>& part, std::string* device) {
  PhaseProgress progress(fmt::format("benchmarking {} on {} {} rank(s)", what, launch.ranks, launch.backend));
  const auto outputs = exec::RunRanks(launch, [&](exec::RankContext& c) {
    return nlohmann::json{{"device", c.runtime.device()}, {"part", part(c)}}.dump();
  });
  std::vector<std::string> parts;
  for (const std::string& o : outputs) {
    const auto j = nlohmann::json::parse(o);
    *device = j.at("device");
    parts.push_back(j.at("part"));
  }
  return parts;
}

int BenchCollectives(const BenchArgs& args) {
  if (args.backend != "gloo" && args.backend != "nccl")
    throw std::runtime_error("bench collectives: --backend is gloo or nccl, not " + args.backend);
  exec::LaunchOptions launch;
  launch.backend = args.backend;
  launch.ranks = static_cast<int>(args.ranks > 0 ? args.ranks : (args.backend == "gloo" ? 4 : 1));
  exec::CollectiveBenchOptions options;
  for (const std::string& op : args.ops) options.ops.push_back(ParseCollective(op));
  options.sizes = ParseSizeRange(args.sizes, "--sizes");
  options.warmup = static_cast<int>(args.warmup);
  options.repeats = static_cast<int>(args.repeats);
  std::string device;
  const std::vector<std::string> times = RunBenchmark(
      launch, "collectives", [&](exec::RankContext& c) { return exec::CollectiveBenchRank(c, options); }, &device);
  const auto samples = exec::CombineCollectiveBench(options, args.backend, times);
  std::string table =
      fmt::format("# {} collectives, {} ranks on {} ({}); {} iterations after {} warm-up, median of the slowest rank\n",
                  args.backend, launch.ranks, exec::HostName(), device, options.repeats, options.warmup);
  table += fmt::format("{:>14} {:>12} {:>12} {:>12} {:>12} {:>12}\n", "op", "size", "time(us)", "min(us)",
                       "algbw(GB/s)", "busbw(GB/s)");
  for (const auto& s : samples)
    table += fmt::format("{:>14} {:>12} {:>12.1f} {:>12.1f} {:>12.3f} {:>12.3f}\n", ToString(s.op),
                         FormatQuantity(s.size, Quantity::kBytes), s.seconds * 1e6, s.min_seconds * 1e6,
                         s.algbw() / 1e9, s.busbw() / 1e9);
  Emit(args, exec::CollectiveMeasurements(exec::DescribeRanks(launch, device), samples), table);
  return 0;
}

int BenchGemm(const BenchArgs& args) {
  if (args.backend != "cpu" && args.backend != "cuda")
    throw std::runtime_error("bench gemm: --backend is cpu or cuda, not " + args.backend);
  exec::LaunchOptions launch;
  launch.backend = args.backend == "cpu" ? "gloo" : "nccl";
  launch.ranks = static_cast<int>(args.ranks > 0 ? args.ranks : (args.backend == "cpu" ? 4 : 1));
  exec::GemmBenchOptions options = exec::DefaultGemmBench(args.backend);
  if (!args.run_file.empty()) {
    // The products the run's devices compute, so the fit covers the shapes the executor will run.
    const Plan plan = Prepare(LoadRunFile(args.run_file)).plan;
    std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
    for (const GemmShape& g : options.shapes) seen.insert({g.m, g.n, g.k});
    for (const StageProgram& stage : plan.stages)
      for (const auto* tasks : {&stage.forward, &stage.backward})
        for (const Task& t : *tasks)
          if (!t.kernel.gemm.empty() && seen.insert({t.kernel.gemm.m, t.kernel.gemm.n, t.kernel.gemm.k}).second)
            options.shapes.push_back(t.kernel.gemm);
  }
  options.warmup = static_cast<int>(std::min<int64_t>(args.warmup, 3));
  options.repeats = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(args.repeats, 5)));
  std::string device;
  const std::vector<std::string> results = RunBenchmark(
      launch, "GEMMs", [&](exec::RankContext& c) { return exec::GemmBenchRank(c, options); }, &device);
  const exec::GemmBenchResult r = exec::CombineGemmBench(options, results);
  double best = 0;
  for (const auto& g : r.gemms) best = std::max(best, g.flops() / g.seconds);
  const double peak = args.peak > 0 ? args.peak : best;
  const char* dtype = args.backend == "cuda" ? "bfloat16" : "float32";
  std::string table = fmt::format(
      "# {} GEMMs ({}), {} rank(s) at once on {}; median of {} after {} warm-up, {} back to back per "
      "timing; efficiency against {}\n",
      args.backend, dtype, launch.ranks, device, options.repeats, options.warmup, options.burst,
      args.peak > 0 ? FormatQuantity(peak, Quantity::kFlopsPerSecond) + " (--peak)"
                    : FormatQuantity(peak, Quantity::kFlopsPerSecond) + " (the best measured)");
  table += fmt::format("{:>7} {:>7} {:>7} {:>12} {:>14} {:>11}\n", "m", "n", "k", "time(us)", "FLOP/s", "efficiency");
  for (const auto& g : r.gemms)
    table += fmt::format("{:>7} {:>7} {:>7} {:>12.1f} {:>14} {:>10.1f}%\n", g.shape.m, g.shape.n, g.shape.k,
                         g.seconds * 1e6, FormatQuantity(g.flops() / g.seconds, Quantity::kFlopsPerSecond),
                         100 * g.flops() / g.seconds / peak);
  table += fmt::format("{:>23} {:>12} {:>14}\n", "copy (read + write)", "time(us)", "bandwidth");
  for (const auto& c : r.copies)
    table += fmt::format("{:>23} {:>12.1f} {:>14}\n", FormatQuantity(c.bytes, Quantity::kBytes), c.seconds * 1e6,
                         FormatQuantity(c.bytes / c.seconds, Quantity::kBytesPerSecond));
  Emit(args, exec::GemmMeasurements(exec::DescribeRanks(launch, device), r), table);
  return 0;
}

}  // namespace

int Bench(const BenchArgs& args) { return args.what == "gemm" ? BenchGemm(args) : BenchCollectives(args); }

}  // namespace shardlab::cli
