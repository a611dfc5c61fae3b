#include "cli/run_evaluation.h"

#include <chrono>

#include "cli/progress.h"
#include "core/flow/prepared_run.h"
#include "core/util/interrupt.h"
#include "sim/simulate.h"

namespace shardlab::cli {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

RunSpec WithStrategyMode(RunSpec run, const std::string& mode, const std::string& cost_model) {
  ParallelConfig& p = run.parallel;
  if (mode == "semi_auto") {
    p.parallel_mode = ParallelMode::kSemiAutoParallel;
  } else if (!mode.empty()) {
    p.parallel_mode = ParallelMode::kAutoParallel;
    p.search_mode = ParseSearchMode(mode);
  }
  if (!cost_model.empty()) p.cost_model.model = cost_model;
  return run;
}

nlohmann::json EvaluateRun(const RunSpec& run, Engine engine) { return EvaluateRun(Prepare(run), engine); }

nlohmann::json EvaluateRun(const PreparedRun& prepared, Engine engine) {
  const StepResult result = sim::SimulateStep(prepared, engine);
  nlohmann::json j = ToJson(result);
  j["gradient_collectives"] = prepared.plan.stages[result.slowest_stage].buckets.size();
  return j;
}

std::vector<ChildJobResult> EvaluateEverywhere(size_t count, const std::function<std::string(size_t)>& evaluate,
                                               const EvaluationOptions& options, exec::MpiWorld& world) {
  std::vector<size_t> mine;
  for (size_t i = static_cast<size_t>(world.rank()); i < count; i += static_cast<size_t>(world.size()))
    mine.push_back(i);
  std::vector<ChildJobResult> results(count);
  ChildJobOptions child;
  child.parallel = options.jobs;
  child.stop = [] { return StopRequested(); };
  if (options.time_budget > 0)
    child.may_launch = [&] { return SteadySeconds() - options.start_seconds < options.time_budget; };
  child.on_done = [&](size_t k, const ChildJobResult& r) {
    results[mine[k]] = r;
    if (options.progress && world.root())
      options.progress->Done(options.name ? options.name(mine[k]) : std::to_string(mine[k]),
                             options.best ? options.best(results) : "");
  };
  RunInChildProcesses(mine, evaluate, child);
  if (world.size() == 1) return results;
  // Every rank sends its share; the root puts them in place.
  nlohmann::json share = nlohmann::json::array();
  for (size_t i : mine)
    share.push_back({{"index", i}, {"status", static_cast<int>(results[i].status)}, {"output", results[i].output}});
  const std::vector<std::string> gathered = world.GatherOnRoot(share.dump());
  if (!world.root()) return {};
  for (const std::string& text : gathered)
    for (const auto& item : nlohmann::json::parse(text)) {
      ChildJobResult& r = results[item.at("index").get<size_t>()];
      r.status = static_cast<ChildJobResult::Status>(item.at("status").get<int>());
      r.output = item.at("output").get<std::string>();
    }
  return results;
}

}  // namespace shardlab::cli
