// `shardlab compare RUN.json`: the run's own strategies and every search mode
// on the same run, each result simulated with the analytical
// engine and, in child processes, with SimGrid; printed side by side.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_evaluation.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "core/util/interrupt.h"
#include "sim/simulate.h"

namespace shardlab::cli {
namespace {

struct Variant {
  std::string mode, cost_model;  // as asked: "run" for the run's own
  std::string error;
  PreparedRun prepared;
  double analytical = 0;
  double simgrid = 0;
  bool oom = false;
};

}  // namespace

int Compare(const CompareArgs& args) {
  const double start = SteadySeconds();
  exec::MpiWorld world;
  const RunSpec run = LoadRunFile(args.run_file, args.settings);
  std::vector<std::pair<std::string, std::string>> requested;
  for (const std::string& mode : args.modes) {
    if (mode == "all") {
      requested = {{"run", ""},
                   {"dynamic_programming", "mindspore"},
                   {"dynamic_programming", "time"},
                   {"recursive_programming", "mindspore"},
                   {"sharding_propagation", "mindspore"},
                   {"sharding_propagation", "time"}};
      break;
    }
    if (mode == "run" || mode == "semi_auto") {
      requested.push_back({mode, ""});
      continue;
    }
    requested.push_back({mode, "mindspore"});
    if (mode == "dynamic_programming" || mode == "sharding_propagation") requested.push_back({mode, "time"});
  }
  std::vector<Variant> variants;
  Progress searching("searching and estimating", requested.size());
  for (const auto& [mode, cost_model] : requested) {
    Variant v;
    v.mode = mode;
    v.cost_model = cost_model;
    try {
      v.prepared = Prepare(WithStrategyMode(run, mode == "run" ? "" : mode, cost_model));
      const StepResult r = sim::SimulateStep(v.prepared, Engine::kAnalytical);
      v.analytical = r.step_seconds;
      v.oom = r.out_of_memory;
    } catch (const std::exception& e) {
      v.error = e.what();
    }
    searching.Done(v.mode + (v.cost_model.empty() ? "" : " (" + v.cost_model + ")"), "");
    variants.push_back(std::move(v));
  }
  searching.Finish();
  if (args.engine != "analytical") {
    StopOnInterrupt();
    EvaluationOptions options;
    options.jobs = args.jobs > 0 ? static_cast<int>(args.jobs) : AvailableCores();
    options.start_seconds = start;
    Progress simulating("simulating on SimGrid", variants.size());
    options.progress = &simulating;
    options.name = [&](size_t i) { return variants[i].mode; };
    const auto results = EvaluateEverywhere(
        variants.size(),
        [&](size_t i) -> std::string {  // in a child: the plans searched above are in its copy of memory
          if (!variants[i].error.empty()) throw std::runtime_error(variants[i].error);
          return fmt::format("{:.17g}", sim::SimulateStep(variants[i].prepared, Engine::kSimGrid).step_seconds);
        },
        options, world);
    if (StopRequested()) throw Stopped();
    if (!world.root()) return 0;
    for (size_t i = 0; i < variants.size(); ++i)
      if (results[i].status == ChildJobResult::Status::kOk) variants[i].simgrid = std::stod(results[i].output);
  }
  double reference = 0;
  for (const Variant& v : variants)
    if (v.mode == "run" && v.error.empty()) reference = v.simgrid > 0 ? v.simgrid : v.analytical;

  if (args.json) {
    nlohmann::json out = {{"run", run.name}, {"variants", nlohmann::json::array()}};
    for (const Variant& v : variants) {
      nlohmann::json j = {{"mode", v.mode}};
      if (!v.error.empty()) {
        j["error"] = v.error;
      } else {
        j["strategy_choice"] = ToJson(v.prepared.sharded.choice);
        j["search_seconds"] = v.prepared.sharded.choice.search_seconds;
        j["objective"] = v.prepared.sharded.choice.objective;
        j["analytical_step_seconds"] = v.analytical;
        if (v.simgrid > 0) j["simgrid_step_seconds"] = v.simgrid;
        j["out_of_memory"] = v.oom;
      }
      out["variants"].push_back(j);
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("compare {}: {} devices, {} per stage\n", run.name, run.parallel.device_num,
                           run.parallel.devices_per_stage());
  std::cout << fmt::format("  {:<24} {:<10} {:>9} {:>13} {:>12} {:>12} {:>10}\n", "mode", "cost", "search", "objective",
                           "analytical", "simgrid", "vs run");
  for (const Variant& v : variants) {
    const StrategyChoice& c = v.prepared.sharded.choice;
    const std::string mode = v.mode == "run" ? "run (" + c.mode + ")" : v.mode;
    const std::string cost = c.Searched() ? c.cost_model : "-";
    if (!v.error.empty()) {
      std::cout << fmt::format("  {:<24} {:<10} failed: {}\n", mode, v.cost_model.empty() ? "-" : v.cost_model,
                               v.error);
      continue;
    }
    const double step = v.simgrid > 0 ? v.simgrid : v.analytical;
    std::cout << fmt::format("  {:<24} {:<10} {:>9} {:>13.5g} {:>12} {:>12} {:>10}{}\n", mode, cost,
                             FormatQuantity(c.search_seconds, Quantity::kSeconds), c.objective,
                             FormatQuantity(v.analytical, Quantity::kSeconds),
                             v.simgrid > 0 ? FormatQuantity(v.simgrid, Quantity::kSeconds) : "-",
                             reference > 0 ? fmt::format("{:+.1f}%", 100 * (step - reference) / reference) : "-",
                             v.oom ? "  (out of memory)" : "");
  }
  return 0;
}

}  // namespace shardlab::cli
