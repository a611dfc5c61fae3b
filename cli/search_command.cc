// `shardlab search RUN.json`: searches operator strategies with one of
// MindSpore's modes (or keeps the semi-auto ones), prints a table of what
// every operator does under the result and its simulated step, and writes
// the result as a strategy checkpoint.
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/analytical/analytical_engine.h"
#include "core/plan/lowering.h"
#include "core/search/search.h"

namespace shardlab::cli {
namespace {}  // namespace

int Search(const SearchArgs& args) {
  RunSpec run = LoadRunFile(args.run_file);
  Graph graph = BuildRunGraph(run);
  const SearchResult result = SearchStrategies(run, graph, args.mode, args.cost_model);
  const std::string out = args.out_file.empty() ? run.parallel.strategy_ckpt_save_file : args.out_file;
  if (!out.empty()) SaveStrategyCheckpoint(out, graph, result.layouts);
  const StepResult step = RunAnalytical(LowerToPlan(run, graph, result.layouts), false);

  if (args.json) {
    nlohmann::json j = {{"run", run.name},
                        {"mode", result.mode},
                        {"cost_model", result.cost_model},
                        {"objective", result.objective},
                        {"memory_bytes", result.memory},
                        {"search_seconds", result.search_seconds},
                        {"configured_operators", result.configured},
                        {"step_seconds", step.step_seconds},
                        {"operators", nlohmann::json::array()}};
    for (size_t i = 0; i < result.layouts.size(); ++i)
      j["operators"].push_back({{"name", graph.op(static_cast<int>(i)).name},
                                {"type", graph.op(static_cast<int>(i)).type},
                                {"strategy", result.layouts[i].strategy},
                                {"device_matrix", result.layouts[i].device_matrix},
                                {"communication", CommunicationSummary(result.layouts[i])}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("search {}: {} on {} devices per stage, cost model {}\n", run.name, result.mode,
                           run.parallel.devices_per_stage(), result.cost_model);
  std::cout << fmt::format("  {:<44} {:<14} {:<26} {:<16} {}\n", "operator", "type", "strategy", "device matrix",
                           "communication");
  const size_t limit = args.all ? result.layouts.size() : std::min<size_t>(result.layouts.size(), 60);
  for (size_t i = 0; i < limit; ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    std::cout << fmt::format("  {:<44} {:<14} {:<26} {:<16} {}\n", op.name.substr(0, 44), op.type,
                             StrategyToString(result.layouts[i].strategy),
                             fmt::format("[{}]", fmt::join(result.layouts[i].device_matrix, ",")),
                             CommunicationSummary(result.layouts[i]));
  }
  if (limit < result.layouts.size())
    std::cout << fmt::format("  ... {} more operators (--all lists them)\n", result.layouts.size() - limit);
  std::cout << fmt::format(
      "totals: {} operators ({} configured), objective {:.6g}, memory {:.2f} GiB per device (cost model's count)\n",
      result.layouts.size(), result.configured, result.objective, result.memory / (1 << 30));
  std::cout << fmt::format("search time {:.3f} s; analytical step with these strategies {:.5g} s\n",
                           result.search_seconds, step.step_seconds);
  if (!out.empty()) std::cout << "wrote " << out << "\n";
  return 0;
}

}  // namespace shardlab::cli
