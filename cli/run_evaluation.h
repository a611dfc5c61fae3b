// Simulating many variants of a run for the commands that compare them
// (tune-fusion, sweep, compare, validate): one variant per child process
// (SimGrid allows one engine per process), several at once on the local
// cores, and under `mpirun` each rank taking its share with the root
// gathering the results.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/run_config.h"
#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
#include "core/util/child_jobs.h"
#include "exec/mpi_world.h"

namespace shardlab::cli {

class Progress;

// The run with its strategies chosen another way: `mode` semi_auto (the
// configured strategies), a search mode (auto_parallel with it) or "" (the
// run's own); `cost_model` mindspore, time or "" (the run's own).
RunSpec WithStrategyMode(RunSpec run, const std::string& mode, const std::string& cost_model);

// Prepares and simulates `run` with `engine` (simgrid or analytical): the
// step result's JSON plus "gradient_collectives", the fused gradient
// collectives of the slowest stage. SimGrid allows one engine per process:
// call it with simgrid in a child process.
nlohmann::json EvaluateRun(const RunSpec& run, Engine engine);
nlohmann::json EvaluateRun(const PreparedRun& prepared, Engine engine);

struct EvaluationOptions {
  int jobs = 1;              // child processes at once on this machine
  double time_budget = 0;    // seconds from `start` after which nothing new starts; 0 = none
  double start_seconds = 0;  // steady-clock seconds when the command began
  Progress* progress = nullptr;
  std::function<std::string(size_t)> name;  // an item's name for the progress lines
  // The best result so far, for the progress lines.
  std::function<std::string(const std::vector<ChildJobResult>&)> best;
};

// Runs evaluate(i) for every i < count, spread over the world's ranks and
// this machine's cores. Returns every result on the root, {} on other ranks.
std::vector<ChildJobResult> EvaluateEverywhere(size_t count, const std::function<std::string(size_t)>& evaluate,
                                               const EvaluationOptions& options, exec::MpiWorld& world);

double SteadySeconds();

}  // namespace shardlab::cli
