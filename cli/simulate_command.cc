#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "core/analytical/analytical_engine.h"
#include "core/config/run_config.h"
#include "core/ops/graph_layouts.h"
#include "core/plan/lowering.h"
#include "core/report/run_summary.h"
#include "core/report/step_report.h"
#include "core/util/atomic_file.h"

namespace shardlab::cli {

int Simulate(const SimulateArgs& args) {
  spdlog::info("loading run {}", args.run_file);
  RunSpec run = LoadRunFile(args.run_file);
  if (!args.engine.empty()) run.simulation.engine = args.engine;
  const Graph graph = BuildRunGraph(run);
  spdlog::info("model graph: {} operators, {} tensors", graph.operators().size(), graph.tensors().size());
  const RunSummary summary = SummarizeRun(run, graph);

  // Strategies: configured `shard`s, MindSpore's data-parallel default elsewhere.
  const std::vector<OpLayout> layouts = InferGraphLayouts(graph, run.parallel.devices_per_stage());
  const Plan plan = LowerToPlan(run, graph, layouts);
  // The SimGrid engine is not built yet: every engine setting runs the analytical engine, and says so.
  const StepResult result = RunAnalytical(plan, !args.trace_file.empty());
  std::string engine_note;
  if (run.simulation.engine != "analytical")
    engine_note = fmt::format("engine \"{}\" requested; the SimGrid engine is not built yet, results are analytical",
                              run.simulation.engine);

  nlohmann::json out = {{"run", ToJson(run)}, {"summary", ToJson(summary)}, {"result", ToJson(result)}};
  if (!engine_note.empty()) out["note"] = engine_note;
  if (args.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << FormatRunSummary(run, summary);
    if (!engine_note.empty()) std::cout << "  note       " << engine_note << "\n";
    std::cout << FormatStepReport(run, plan, result);
  }
  if (!args.out_file.empty()) WriteFileAtomically(args.out_file, out.dump(2) + "\n");
  if (!args.trace_file.empty()) WriteFileAtomically(args.trace_file, ChromeTrace(result).dump() + "\n");
  if (result.out_of_memory) throw std::runtime_error("out of memory: " + result.memory_message);
  return 0;
}

}  // namespace shardlab::cli
