// `shardlab validate-run`: executes a run's plan for real on the chosen back
// end (one process per rank on this machine), simulates the same plan, and
// reports how far they are apart: step time, passes per stage and each kind
// of task (the closed-form costs the engines use against what the kernels
// and collectives took). Both timelines can be written as Chrome traces.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_evaluation.h"
#include "core/calibration/fit_calibration.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "core/util/atomic_file.h"
#include "core/util/child_jobs.h"
#include "core/util/interrupt.h"
#include "core/util/paths.h"
#include "exec/plan_executor.h"
#include "exec/rank_launcher.h"
#include "sim/simulate.h"

namespace shardlab::cli {
namespace {

double Error(double predicted, double measured) { return measured > 0 ? (predicted - measured) / measured : 0; }

std::string Percent(double e) { return fmt::format("{:+.1f}%", 100 * e); }

}  // namespace

int ValidateRun(const ValidateRunArgs& args) {
  RunSpec run = LoadRunFile(args.run_file);
  if (!args.calibration_file.empty())
    ApplyCalibration(LoadCalibrationFile(args.calibration_file),
                     std::filesystem::absolute(args.calibration_file).lexically_normal().string(), &run.cluster);
  if (run.parallel.device_num > exec::kMaxLocalRanks)
    throw std::runtime_error(
        fmt::format("{}: the run has {} devices; validate-run executes one process per device "
                    "on this machine, at most {}",
                    args.run_file, run.parallel.device_num, exec::kMaxLocalRanks));
  const PreparedRun prepared = Prepare(run);
  const Plan& plan = prepared.plan;
  exec::CheckExecutable(plan);
  const int64_t ranks = args.ranks > 0 ? args.ranks : plan.devices;
  if (ranks != plan.devices)
    throw std::runtime_error(fmt::format("--ranks {}: the run {} has {} devices; the executor runs one rank per device",
                                         ranks, args.run_file, plan.devices));

  // Measured: one child per rank (before anything here starts SimGrid or CUDA).
  exec::LaunchOptions launch;
  launch.backend = args.backend;
  launch.ranks = static_cast<int>(ranks);
  exec::ExecutionOptions options;
  options.warmup_steps = static_cast<int>(args.warmup);
  options.steps = static_cast<int>(args.steps);
  spdlog::info("executing {} on {} {} ranks", args.run_file, ranks, args.backend);
  StopOnInterrupt();  // a signal stops the ranks and removes their rendezvous folder
  std::string device;
  const auto outputs = [&] {
    PhaseProgress progress(
        fmt::format("executing {} step(s) on {} {} ranks", args.warmup + args.steps, ranks, args.backend));
    return exec::RunRanks(launch, [&](exec::RankContext& c) {
      nlohmann::json j = exec::ToJson(exec::ExecutePlan(plan, c.rank, c.world, c.runtime, options));
      j["device"] = c.runtime.device();
      return j.dump();
    });
  }();
  std::vector<exec::RankExecution> executions;
  for (const std::string& o : outputs) {
    const auto j = nlohmann::json::parse(o);
    device = j.at("device");
    executions.push_back(exec::RankExecutionFromJson(j));
  }
  const StepResult measured = exec::MeasuredStep(plan, executions);

  // Simulated: the analytical engine here, SimGrid in a child.
  const StepResult analytical = sim::SimulateStep(prepared, Engine::kAnalytical, sim::TraceRequest{true, {}});
  ChildJobOptions child;
  child.stop = [] { return StopRequested(); };
  child.forward_progress = true;
  const auto simgrid_job = [&] {
    PhaseProgress progress("simulating on SimGrid");
    return RunInChildProcesses(
        {0}, [&](size_t) { return std::to_string(sim::SimulateStep(prepared, Engine::kSimGrid).step_seconds); }, child);
  }();
  if (StopRequested()) throw Stopped();
  if (simgrid_job[0].status != ChildJobResult::Status::kOk)
    throw std::runtime_error("SimGrid failed: " + simgrid_job[0].output);
  const double simgrid = std::stod(simgrid_job[0].output);

  // Task types summed over the representative ranks (Plan::RepresentativeRank).
  std::map<std::string, exec::TaskTypeTime> types;
  for (const exec::RankExecution& e : executions) {
    if (e.rank != plan.RepresentativeRank(e.stage)) continue;
    for (const exec::TaskTypeTime& t : e.task_types) {
      exec::TaskTypeTime& sum = types[t.type];
      sum.type = t.type;
      sum.count += t.count;
      sum.measured += t.measured;
      sum.predicted += t.predicted;
    }
  }

  nlohmann::json report = {{"run", args.run_file},
                           {"backend", args.backend},
                           {"device", device},
                           {"ranks", ranks},
                           {"calibration", run.cluster.calibration_file},
                           {"measured_steps", nlohmann::json::array()},
                           {"measured", ToJson(measured)},
                           {"simulated", {{"analytical", ToJson(analytical)}, {"simgrid_step_seconds", simgrid}}},
                           {"errors",
                            {{"step_analytical", Error(analytical.step_seconds, measured.step_seconds)},
                             {"step_simgrid", Error(simgrid, measured.step_seconds)},
                             {"stages", nlohmann::json::array()},
                             {"task_types", nlohmann::json::array()}}}};
  for (const exec::RankExecution& e : executions) report["measured_steps"].push_back(e.step_seconds);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StageResult &m = measured.stages[s], &a = analytical.stages[s];
    report["errors"]["stages"].push_back({{"stage", s},
                                          {"forward_measured", m.forward_seconds},
                                          {"forward_simulated", a.forward_seconds},
                                          {"forward_error", Error(a.forward_seconds, m.forward_seconds)},
                                          {"backward_measured", m.backward_seconds},
                                          {"backward_simulated", a.backward_seconds},
                                          {"backward_error", Error(a.backward_seconds, m.backward_seconds)}});
  }
  for (const auto& [name, t] : types)
    report["errors"]["task_types"].push_back({{"type", name},
                                              {"count", t.count},
                                              {"measured", t.measured},
                                              {"predicted", t.predicted},
                                              {"error", Error(t.predicted, t.measured)}});

  if (args.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{}: {} ranks on {} ({}), median of {} steps after {} warm-up\n", run.name, ranks,
                             args.backend, device, options.steps, options.warmup_steps);
    if (!run.cluster.calibration_file.empty())
      std::cout << "calibration: " << DisplayPath(run.cluster.calibration_file) << "\n";
    const auto seconds = [](double s) { return FormatQuantity(s, Quantity::kSeconds); };
    std::cout << fmt::format("  step time   measured {}   analytical {} ({})   SimGrid {} ({})\n",
                             seconds(measured.step_seconds), seconds(analytical.step_seconds),
                             Percent(Error(analytical.step_seconds, measured.step_seconds)), seconds(simgrid),
                             Percent(Error(simgrid, measured.step_seconds)));
    for (size_t s = 0; s < plan.stages.size(); ++s) {
      const StageResult &m = measured.stages[s], &a = analytical.stages[s];
      std::cout << fmt::format("  stage {}     forward {} vs {} ({})   backward {} vs {} ({})   bubble {}\n", s,
                               seconds(m.forward_seconds), seconds(a.forward_seconds),
                               Percent(Error(a.forward_seconds, m.forward_seconds)), seconds(m.backward_seconds),
                               seconds(a.backward_seconds), Percent(Error(a.backward_seconds, m.backward_seconds)),
                               seconds(m.bubble_seconds));
    }
    std::cout << fmt::format("  {:<26} {:>7} {:>13} {:>13} {:>9}\n", "task type (per step)", "tasks", "measured(ms)",
                             "model(ms)", "error");
    for (const auto& [name, t] : types)
      std::cout << fmt::format("  {:<26} {:>7} {:>13.3f} {:>13.3f} {:>9}\n", name, t.count, 1e3 * t.measured,
                               1e3 * t.predicted, Percent(Error(t.predicted, t.measured)));
  }
  if (!args.out_file.empty()) WriteFileAtomically(args.out_file, report.dump(2) + "\n");
  if (!args.measured_trace_file.empty())
    WriteFileAtomically(args.measured_trace_file,
                        ChromeTrace(measured.events, static_cast<int64_t>(plan.stages.size())).dump() + "\n");
  if (!args.simulated_trace_file.empty())
    WriteFileAtomically(args.simulated_trace_file,
                        ChromeTrace(analytical.events, static_cast<int64_t>(plan.stages.size())).dump() + "\n");
  return 0;
}

}  // namespace shardlab::cli
