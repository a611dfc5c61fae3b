// `shardlab search RUN.json`: chooses operator strategies as the run says
// (or with another search mode), prints a table of what every operator does
// under the result and its simulated step, and writes the result as a
// strategy checkpoint.
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_evaluation.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "sim/simulate.h"

namespace shardlab::cli {

int Search(const SearchArgs& args) {
  RunSpec run = WithStrategyMode(LoadRunFile(args.run_file, args.settings), args.mode, args.cost_model);
  if (!args.out_file.empty()) run.parallel.strategy_ckpt_save_file = args.out_file;
  const PreparedRun prepared = [&] {
    PhaseProgress progress(run.parallel.parallel_mode == ParallelMode::kAutoParallel
                               ? fmt::format("searching strategies ({})", ToString(run.parallel.search_mode))
                               : "preparing");
    return Prepare(run);
  }();
  const ShardedGraph& sharded = prepared.sharded;
  const StrategyChoice& choice = sharded.choice;
  const StepResult step = sim::SimulateStep(prepared, Engine::kAnalytical);

  if (args.json) {
    nlohmann::json j = {{"run", run.name},
                        {"mode", choice.mode},
                        {"cost_model", choice.cost_model},
                        {"objective", choice.objective},
                        {"memory_bytes", choice.memory},
                        {"search_seconds", choice.search_seconds},
                        {"configured_operators", choice.configured},
                        {"step_seconds", step.step_seconds},
                        {"operators", nlohmann::json::array()}};
    for (size_t i = 0; i < sharded.layouts.size(); ++i)
      j["operators"].push_back({{"name", sharded.graph.op(static_cast<int>(i)).name},
                                {"type", sharded.graph.op(static_cast<int>(i)).type},
                                {"strategy", sharded.layouts[i].strategy},
                                {"device_matrix", sharded.layouts[i].device_matrix},
                                {"communication", CommunicationSummary(sharded.layouts[i])}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("search {}: {} on {} devices per stage{}\n", run.name, choice.mode,
                           run.parallel.devices_per_stage(),
                           choice.Searched() ? ", cost model " + choice.cost_model : std::string());
  std::cout << fmt::format("  {:<44} {:<14} {:<26} {:<16} {}\n", "operator", "type", "strategy", "device matrix",
                           "communication");
  const size_t limit = args.all ? sharded.layouts.size() : std::min<size_t>(sharded.layouts.size(), 60);
  for (size_t i = 0; i < limit; ++i) {
    const Operator& op = sharded.graph.op(static_cast<int>(i));
    std::cout << fmt::format("  {:<44} {:<14} {:<26} {:<16} {}\n", op.name.substr(0, 44), op.type,
                             StrategyToString(sharded.layouts[i].strategy),
                             fmt::format("[{}]", fmt::join(sharded.layouts[i].device_matrix, ",")),
                             CommunicationSummary(sharded.layouts[i]));
  }
  if (limit < sharded.layouts.size())
    std::cout << fmt::format("  ... {} more operators (--all lists them)\n", sharded.layouts.size() - limit);
  std::cout << fmt::format(
      "totals: {} operators ({} configured), objective {:.6g}, memory {:.2f} GiB per device (cost model's count)\n",
      sharded.layouts.size(), choice.configured, choice.objective, choice.memory / (1 << 30));
  std::cout << fmt::format("search time {}; analytical step with these strategies {}\n",
                           FormatQuantity(choice.search_seconds, Quantity::kSeconds),
                           FormatQuantity(step.step_seconds, Quantity::kSeconds));
  if (!choice.saved_checkpoint.empty()) std::cout << "wrote " << choice.saved_checkpoint << "\n";
  return 0;
}

}  // namespace shardlab::cli
