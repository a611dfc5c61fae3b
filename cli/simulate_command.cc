#include <iostream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "core/config/run_config.h"
#include "core/report/run_summary.h"
#include "core/util/atomic_file.h"

namespace shardlab::cli {

int Simulate(const SimulateArgs& args) {
  spdlog::info("loading run {}", args.run_file);
  const RunSpec run = LoadRunFile(args.run_file);
  const Graph graph = BuildRunGraph(run);
  spdlog::info("model graph: {} operators, {} tensors", graph.operators().size(), graph.tensors().size());
  const RunSummary summary = SummarizeRun(run, graph);
  nlohmann::json result = {{"run", ToJson(run)}, {"summary", ToJson(summary)}};
  if (args.json) {
    std::cout << result.dump(2) << "\n";
  } else {
    std::cout << FormatRunSummary(run, summary);
  }
  if (!args.out_file.empty()) WriteFileAtomically(args.out_file, result.dump(2) + "\n");
  return 0;
}

}  // namespace shardlab::cli
