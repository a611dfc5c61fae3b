// The `shardlab` subcommands. main.cc parses arguments (CLI11 lives only
// there); each command is a plain function that returns the process exit code
// and throws for user errors, which main turns into one line on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/ops/layout_queries.h"

namespace shardlab::cli {

struct SimulateArgs {
  std::string run_file;
  std::vector<std::string> settings;  // --set KEY=VALUE, applied to the run file before it is read
  std::string out_file;               // result JSON; "" = none
  std::string trace_file;             // Chrome/Perfetto trace; "" = none
  std::vector<int64_t> trace_ranks;   // devices on the trace; empty = the default choice
  std::string engine;                 // overrides the run's simulation.engine; "" = keep
  std::string symmetry;               // overrides the run's simulation.symmetry; "" = keep
  bool json = false;                  // print JSON instead of text
};
int Simulate(const SimulateArgs& args);

struct GraphArgs {
  std::string model_file;
  std::string save_file;  // write the operator graph as JSON; "" = none
  bool json = false;
  int64_t pipeline_stages = 1;
};
int GraphCommand(const GraphArgs& args);

// Lists the model builders and their parameters.
int Models();

// JSON arguments are parsed in core/ops/layout_queries.h, so their errors name the option.
using LayoutArgs = OpLayoutQuery;
int Layout(const LayoutArgs& args);

using RedistributeArgs = RedistributionQuery;
int Redistribute(const RedistributeArgs& args);

struct CollectiveArgs {
  std::string op = "allreduce";
  std::string bytes = "1GiB";  // a size, or "8B..4GiB"
  std::string cluster_file;
  std::string algorithm = "auto";
  std::string fidelity = "aggregated";
  int64_t ranks = 8;
  int64_t first_rank = 0;
  int64_t stride = 1;
};
int CollectiveCommand(const CollectiveArgs& args);

struct ValidateArgs {
  std::string folder;
  std::string engine = "analytical";  // or simgrid (one process per case)
  bool json = false;
  bool markdown = false;  // the tables for docs/cost-model.md
};
int Validate(const ValidateArgs& args);

struct TuneFusionArgs {
  std::string run_file;
  std::vector<std::string> settings;  // --set KEY=VALUE, applied to the run file first
  std::string op = "allreduce";       // allreduce | allgather | reducescatter
  std::string mode;                   // index | size; "" = index for AllReduce unless the parallel optimizer is on
  int64_t max_buckets = 32;
  double time_budget = 0;      // seconds; 0 = none
  int64_t verify = 6;          // tuned candidates verified with the engine, besides MindSpore's defaults
  double verify_margin = 0.1;  // verify only candidates within this fraction of the fast model's best
  int64_t jobs = 0;            // child processes at once; 0 = every core
  std::string engine = "simgrid";
  std::string out_file;   // the tuned run file; "" = none
  std::string plot_file;  // SVG of step time against bucket count; "" = none
  bool json = false;
};
int TuneFusion(const TuneFusionArgs& args);

struct SearchArgs {
  std::string run_file;
  std::vector<std::string> settings;  // --set KEY=VALUE
  std::string mode;  // dynamic_programming | recursive_programming | sharding_propagation | semi_auto; "" = the run's
  std::string cost_model;  // mindspore | time; "" = the run's parallel.cost_model
  std::string out_file;    // strategy checkpoint; "" = the run's strategy_ckpt_save_file
  bool all = false;        // list every operator
  bool json = false;
};
int Search(const SearchArgs& args);

struct CompareArgs {
  std::string run_file;
  std::vector<std::string> settings;         // --set KEY=VALUE
  std::vector<std::string> modes = {"all"};  // all, or run (the run's own strategies), semi_auto, search modes
  std::string engine = "both";               // analytical | both (analytical and SimGrid)
  int64_t jobs = 0;
  bool json = false;
};
int Compare(const CompareArgs& args);

struct SweepArgs {
  std::string sweep_file;
  std::string out_file;  // .csv or .json; "" = the sweep file's "out", else none
  std::string engine;    // "" = the sweep file's
  int64_t jobs = 0;
};
int Sweep(const SweepArgs& args);

using DevicesArgs = DeviceGroupsQuery;
int Devices(const DevicesArgs& args);

struct BenchArgs {
  std::string what;     // collectives | gemm
  std::string backend;  // collectives: gloo | nccl; gemm: cpu | cuda
  std::vector<std::string> ops = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"};
  std::string sizes = "1KiB:64MiB";
  int64_t ranks = 0;  // 0: 4 for gloo and cpu, 1 for nccl and cuda
  int64_t warmup = 3;
  int64_t repeats = 10;
  double peak = 0;       // gemm: FLOP/s the efficiency is against; 0 = the best measured
  std::string run_file;  // gemm: also the per-device products of this run's plan; "" = none
  std::string out_file;  // measurements JSON for `shardlab calibrate`; "" = none
  bool json = false;
};
int Bench(const BenchArgs& args);

struct CalibrateArgs {
  std::vector<std::string> measurement_files;
  std::string out_file;  // required to fit
  bool check_profile = false;
  std::string cluster_file;  // with check_profile
  bool json = false;
};
int Calibrate(const CalibrateArgs& args);

struct ValidateRunArgs {
  std::string run_file;
  std::string backend = "gloo";
  int64_t ranks = 0;             // 0 = the run's device count
  std::string calibration_file;  // overrides the cluster's; "" = keep
  int64_t warmup = 1;
  int64_t steps = 3;
  std::string out_file;              // the error report (JSON)
  std::string measured_trace_file;   // Chrome/Perfetto trace of the measured step
  std::string simulated_trace_file;  // and of the simulated one
  bool json = false;
};
int ValidateRun(const ValidateRunArgs& args);

}  // namespace shardlab::cli
