#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "core/report/rank_view.h"
#include "core/report/run_summary.h"
#include "core/report/step_report.h"
#include "core/util/atomic_file.h"
#include "sim/simulate.h"

namespace shardlab::cli {

int Simulate(const SimulateArgs& args) {
  spdlog::info("loading run {}", args.run_file);
  RunSpec run = LoadRunFile(args.run_file, args.settings);
  if (!args.engine.empty()) run.simulation.engine = ParseEngine(args.engine);
  if (!args.symmetry.empty()) run.simulation.symmetry = ParseSymmetry(args.symmetry);
  const PreparedRun prepared = [&] {
    PhaseProgress progress("preparing (graph, strategies, plan)");
    return Prepare(run);
  }();
  spdlog::info("model graph: {} operators, {} tensors", prepared.graph.operators().size(),
               prepared.graph.tensors().size());
  const RunSummary summary = SummarizeRun(run, prepared.graph);
  const Plan& plan = prepared.plan;

  // result.json (and the same document on stdout with --json) carries the timeline too: the GUI draws it.
  const bool with_events = !args.trace_file.empty() || !args.out_file.empty() || args.json;
  for (int64_t r : args.trace_ranks)
    if (r < 0 || r >= plan.devices)
      throw std::runtime_error(
          fmt::format("--trace-ranks: rank {} is not one of the run's {} devices", r, plan.devices));
  const sim::TraceRequest trace{with_events, args.trace_ranks};
  const Engine engine = run.simulation.engine;
  std::vector<StepResult> results;
  if (engine == Engine::kSimGrid || engine == Engine::kBoth) {
    sim::SimGridStats stats;
    {
      PhaseProgress progress("simulating on SimGrid");
      results.push_back(sim::SimulateStep(prepared, Engine::kSimGrid, trace, &stats));
    }
    spdlog::info("simgrid: {} devices simulated, {} flows, {} collectives, {} timers in {:.2f} s",
                 results.back().simulated_devices, stats.flows, stats.collectives, stats.timers,
                 results.back().wall_seconds);
  }
  if (engine == Engine::kAnalytical || engine == Engine::kBoth)
    results.push_back(sim::SimulateStep(prepared, Engine::kAnalytical, trace));
  const StepResult& result = results.front();
  const RankView rank = ViewRank(run, prepared.sharded, plan, run.parallel.global_rank);

  nlohmann::json out = {{"run", ToJson(run)},
                        {"summary", ToJson(summary)},
                        {"strategy_choice", ToJson(prepared.sharded.choice)},
                        {"strategies", prepared.sharded.Strategies()},
                        {"rank", ToJson(rank)},
                        {"result", ToJson(result)}};
  if (results.size() > 1) out["analytical"] = ToJson(results[1]);
  if (args.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << FormatRunSummary(run, summary);
    std::cout << FormatStrategyChoice(prepared.sharded.choice);
    std::cout << FormatStepReport(run, plan, result);
    std::cout << FormatRankView(rank);
    if (results.size() > 1) {
      const double a = results[1].step_seconds, s = result.step_seconds;
      std::cout << fmt::format("  analytical step time {} ({:+.2f}% against SimGrid's {})\n",
                               FormatQuantity(a, Quantity::kSeconds), s > 0 ? 100 * (a - s) / s : 0.0,
                               FormatQuantity(s, Quantity::kSeconds));
    }
  }
  if (!args.out_file.empty()) WriteFileAtomically(args.out_file, out.dump(2) + "\n");
  if (!args.trace_file.empty())
    WriteFileAtomically(args.trace_file,
                        ChromeTrace(result.events, static_cast<int64_t>(plan.stages.size())).dump() + "\n");
  if (result.out_of_memory) throw std::runtime_error("out of memory: " + result.memory_message);
  return 0;
}

}  // namespace shardlab::cli
