// The shardlab command line: parses arguments with CLI11 and dispatches to the
// commands in cli/. Exit codes: 0 success, 1 user error (one line on stderr),
// 2 usage error.
#include <charconv>
#include <cmath>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/config/simulation_options.h"
#include "core/util/interrupt.h"
#include "core/util/quote.h"
#include "core/util/warning.h"

namespace {

// The log's stderr: a progress line being drawn is cleared before each log line.
class ProgressAwareStderrSink : public spdlog::sinks::stderr_color_sink_st {
 public:
  void log(const spdlog::details::log_msg& message) override {
    shardlab::cli::Progress::Interrupt();
    spdlog::sinks::stderr_color_sink_st::log(message);
  }
};

constexpr int kUserError = 1;
constexpr int kUsageError = 2;

// A finite number of at least `min` (above it when `strict`). CLI11's own
// number checks let nan through and print their range with DBL_MAX's digits.
CLI::Validator FiniteNumber(double min, bool strict) {
  const std::string description = fmt::format("NUMBER {} {}", strict ? ">" : ">=", min);
  return CLI::Validator(
      [min, strict](std::string& text) -> std::string {
        double value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
          return "expected a finite number, got " + shardlab::Quoted(text);
        if (strict ? value <= min : value < min)
          return fmt::format("expected a number {} {}, got {}", strict ? "above" : "of at least", min, text);
        return std::string();
      },
      description);
}

// The SimGrid version is the one shardlab was built against: reading the
// loaded library's would load SimGrid, which costs --version most of its time.
std::string VersionText() { return "shardlab " SHARDLAB_VERSION " (SimGrid " SHARDLAB_SIMGRID_VERSION ")"; }

// --set KEY=VALUE on the commands that read one run file; repeatable.
void AddSetOption(CLI::App* command, std::vector<std::string>& settings) {
  command
      ->add_option("--set", settings,
                   "change a run-file key first: KEY=VALUE, a dotted key and a JSON value (or a bare word), "
                   "e.g. --set parallel.micro_batch_num=64; repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = shardlab::cli;
  shardlab::InstallInterruptHandlers();
  CLI::App app{"shardlab: simulate distributed deep-learning training on Ascend and GPU clusters"};
  app.set_version_flag("--version", VersionText());
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  cli::SimulateArgs simulate;
  auto* simulate_cmd = app.add_subcommand("simulate", "Simulate one training step of a run file");
  simulate_cmd->add_option("run", simulate.run_file, "run file (JSON)")->required();
  AddSetOption(simulate_cmd, simulate.settings);
  simulate_cmd->add_option("-o,--out", simulate.out_file, "write the result JSON here");
  simulate_cmd->add_flag("--json", simulate.json, "print JSON instead of the text summary");
  simulate_cmd->add_option("--trace", simulate.trace_file, "write a Chrome/Perfetto trace here");
  simulate_cmd
      ->add_option("--trace-ranks", simulate.trace_ranks,
                   "devices on the trace, e.g. 0,5,17 (default: all of runs up to 64 devices, else one per stage)")
      ->delimiter(',');
  simulate_cmd->add_option("--engine", simulate.engine, "simgrid, analytical or both (default: the run's)")
      ->check(CLI::IsMember({"simgrid", "analytical", "both"}));
  simulate_cmd
      ->add_option("--symmetry", simulate.symmetry,
                   "fold: SimGrid simulates one device per orbit of symmetric devices; off: every device "
                   "(default: the run's)")
      ->check(CLI::IsMember(shardlab::SymmetryNames()));

  cli::GraphArgs graph;
  auto* graph_cmd = app.add_subcommand("graph", "Summarise a model file: operators, parameters, FLOPs per sample");
  graph_cmd->add_option("model", graph.model_file, "model file (JSON)")->required();
  graph_cmd->add_option("--save", graph.save_file, "write the operator graph as a model file with a \"graph\"");
  graph_cmd->add_option("--pipeline-stages", graph.pipeline_stages, "split the layers over this many stages")
      ->check(CLI::Range(1, 4096));
  graph_cmd->add_flag("--json", graph.json, "print JSON instead of text");

  auto* models_cmd = app.add_subcommand("models", "List the model builders and their parameters");

  cli::LayoutArgs layout;
  auto* layout_cmd = app.add_subcommand("layout", "Device matrix, tensor maps and communication of one operator");
  layout_cmd->add_option("--op", layout.op, "operator type, e.g. MatMul")->required();
  layout_cmd->add_option("--inputs", layout.inputs, "input shapes, e.g. '[[128,64],[64,32]]'")->required();
  layout_cmd->add_option("--strategy", layout.strategy, "shard strategy, e.g. '[[2,1],[1,4]]'")->required();
  layout_cmd->add_option("--devices", layout.devices, "devices of the stage")->check(CLI::Range(1, 4096));
  layout_cmd->add_option("--attrs", layout.attrs, "operator attributes, e.g. '{\"transpose_b\":true}'");
  layout_cmd->add_option("--weights", layout.weights, "inputs that are parameters, e.g. '[1]' (default: the family's)");
  layout_cmd->add_option("--dtype", layout.dtype, "element type of the inputs");
  layout_cmd->add_option("--rank", layout.rank, "whose communication groups to list")->check(CLI::Range(0, 4095));

  cli::RedistributeArgs redistribute;
  auto* redistribute_cmd =
      app.add_subcommand("redistribute", "The communication that turns one tensor layout into another");
  redistribute_cmd->add_option("--shape", redistribute.shape, "tensor shape, e.g. '[512,1024]'");
  redistribute_cmd
      ->add_option("--from", redistribute.from, "source layout, e.g. '{\"device_matrix\":[8,4],\"tensor_map\":[1,0]}'")
      ->required();
  redistribute_cmd->add_option("--to", redistribute.to, "target layout (may carry its own \"shape\")")->required();
  redistribute_cmd->add_flag("--enable-alltoall", redistribute.enable_alltoall,
                             "use AlltoAll (MindSpore's enable_alltoall)");
  redistribute_cmd->add_option("--dtype", redistribute.dtype, "element type, for bytes and cost");
  redistribute_cmd->add_option("--rank", redistribute.rank, "whose groups to list")->check(CLI::Range(0, 4095));

  cli::CollectiveArgs collective;
  auto* collective_cmd =
      app.add_subcommand("collective", "Simulate one collective on a cluster's SimGrid platform (nccl-tests table)");
  collective_cmd->add_option("--op", collective.op, "collective")
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"}));
  collective_cmd->add_option("--bytes", collective.bytes, "size (nccl-tests' size), or a range 8B..4GiB");
  collective_cmd->add_option("--ranks", collective.ranks, "group size")->check(CLI::Range(2, 4096));
  collective_cmd->add_option("--cluster", collective.cluster_file, "cluster file (JSON)")->required();
  collective_cmd->add_option("--algo", collective.algorithm, "algorithm (auto: what HCCL or NCCL would pick)")
      ->check(CLI::IsMember({"auto", "ring", "halving_doubling", "hierarchical", "double_binary_tree", "pairwise",
                             "nvls", "nvls_tree", "full_mesh"}));
  collective_cmd->add_option("--fidelity", collective.fidelity, "aggregated flows or every ring step")
      ->check(CLI::IsMember({"aggregated", "step"}));
  collective_cmd->add_option("--first-rank", collective.first_rank, "the group's first rank")
      ->check(CLI::Range(0, 4095));
  collective_cmd->add_option("--stride", collective.stride, "rank distance between members (8: one per server)")
      ->check(CLI::Range(1, 4096));

  cli::ValidateArgs validate;
  auto* validate_cmd = app.add_subcommand("validate", "Predicted against published results for a folder of cases");
  validate_cmd->add_option("folder", validate.folder, "folder of validation cases, e.g. configs/validation")
      ->required();
  validate_cmd->add_option("--engine", validate.engine, "analytical (default) or simgrid")
      ->check(CLI::IsMember({"analytical", "simgrid"}));
  validate_cmd->add_flag("--json", validate.json, "print JSON (every case with full precision) instead of text");
  validate_cmd->add_flag("--markdown", validate.markdown, "print the tables as Markdown (docs/cost-model.md)")
      ->excludes("--json");

  cli::TuneFusionArgs tune;
  auto* tune_cmd = app.add_subcommand(
      "tune-fusion", "Search all_reduce_fusion_config / comm_fusion by simulation and write the tuned run");
  tune_cmd->add_option("run", tune.run_file, "run file (JSON)")->required();
  tune_cmd->add_option("--op", tune.op, "which fusion to tune")
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter"}));
  tune_cmd->add_option("--mode", tune.mode, "split indices or a size threshold (default: index for allreduce)")
      ->check(CLI::IsMember({"index", "size"}));
  tune_cmd->add_option("--max-buckets", tune.max_buckets, "most buckets the search considers")
      ->check(CLI::Range(2, 4096));
  tune_cmd->add_option("--time-budget", tune.time_budget, "seconds after which no more verifications start")
      ->check(FiniteNumber(0, false));
  tune_cmd->add_option("--verify", tune.verify, "tuned candidates verified with the engine")
      ->check(CLI::Range(0, 1000));
  tune_cmd
      ->add_option("--verify-margin", tune.verify_margin,
                   "verify only candidates within this fraction of the fast model's best (default 0.1)")
      ->check(FiniteNumber(0, false));
  tune_cmd->add_option("--jobs", tune.jobs, "simulations at once (default: every core)")->check(CLI::Range(0, 1024));
  tune_cmd->add_option("--engine", tune.engine, "engine that verifies: simgrid (default) or analytical")
      ->check(CLI::IsMember({"simgrid", "analytical"}));
  tune_cmd->add_option("-o,--out", tune.out_file, "write the run file with the winner here");
  tune_cmd->add_option("--plot", tune.plot_file, "write an SVG of step time against the number of buckets");
  tune_cmd->add_flag("--json", tune.json, "print JSON instead of text");
  AddSetOption(tune_cmd, tune.settings);

  cli::SearchArgs search;
  auto* search_cmd = app.add_subcommand("search", "Search operator strategies (MindSpore's auto_parallel modes)");
  search_cmd->add_option("run", search.run_file, "run file (JSON)")->required();
  AddSetOption(search_cmd, search.settings);
  search_cmd
      ->add_option("--mode", search.mode,
                   "semi_auto or a search mode (default: the run's own parallel_mode and search_mode)")
      ->check(CLI::IsMember({"dynamic_programming", "recursive_programming", "sharding_propagation", "semi_auto"}));
  search_cmd->add_option("--cost-model", search.cost_model, "mindspore or time (default: parallel.cost_model)")
      ->check(CLI::IsMember({"mindspore", "time"}));
  search_cmd->add_option("-o,--out", search.out_file, "write the strategies as a strategy checkpoint (JSON)");
  search_cmd->add_flag("--all", search.all, "list every operator");
  search_cmd->add_flag("--json", search.json, "print JSON instead of text");

  cli::CompareArgs compare;
  auto* compare_cmd =
      app.add_subcommand("compare", "Every search mode on one run, simulated side by side with its own strategies");
  compare_cmd->add_option("run", compare.run_file, "run file (JSON)")->required();
  AddSetOption(compare_cmd, compare.settings);
  compare_cmd
      ->add_option("--modes", compare.modes,
                   "all, or some of run (the run's own strategies), semi_auto, dynamic_programming, "
                   "recursive_programming, sharding_propagation")
      ->delimiter(',')
      ->check(CLI::IsMember(
          {"all", "run", "semi_auto", "dynamic_programming", "recursive_programming", "sharding_propagation"}));
  compare_cmd->add_option("--engine", compare.engine, "analytical, or both (analytical and SimGrid, the default)")
      ->check(CLI::IsMember({"analytical", "both"}));
  compare_cmd->add_option("--jobs", compare.jobs, "SimGrid runs at once (default: every core)")
      ->check(CLI::Range(0, 1024));
  compare_cmd->add_flag("--json", compare.json, "print JSON instead of text");

  cli::SweepArgs sweep;
  auto* sweep_cmd = app.add_subcommand("sweep", "Simulate a grid of runs (cluster x model x parallel settings)");
  sweep_cmd->add_option("sweep", sweep.sweep_file, "sweep file (JSON)")->required();
  sweep_cmd->add_option("-o,--out", sweep.out_file, "write the table here (.csv or .json)");
  sweep_cmd->add_option("--engine", sweep.engine, "simgrid or analytical (default: the sweep file's)")
      ->check(CLI::IsMember({"simgrid", "analytical"}));
  sweep_cmd->add_option("--jobs", sweep.jobs, "simulations at once (default: every core)")->check(CLI::Range(0, 1024));

  cli::DevicesArgs devices;
  auto* devices_cmd =
      app.add_subcommand("devices", "Coordinates and communication groups of a rank in a device matrix");
  devices_cmd->add_option("--matrix", devices.matrix, "device matrix, e.g. '[2,2,3]'")->required();
  devices_cmd->add_option("--rank", devices.rank, "the rank")->check(CLI::Range(0, 4095));
  devices_cmd->add_option("--tensor-map", devices.tensor_map, "also list the ranks holding the same slice");

  cli::BenchArgs bench;
  auto* bench_cmd = app.add_subcommand("bench", "Micro-benchmarks on real hardware (measurements for calibrate)");
  bench_cmd->require_subcommand(1);
  auto add_bench_options = [&bench](CLI::App* cmd) {
    cmd->add_option("--ranks", bench.ranks, "processes at once (default: 4 on CPUs, 1 on GPUs)")
        ->check(CLI::Range(1, 64));
    cmd->add_option("--warmup", bench.warmup, "warm-up iterations")->check(CLI::Range(0, 1000));
    cmd->add_option("--repeats", bench.repeats, "timed iterations (the median is reported)")
        ->check(CLI::Range(1, 1000));
    cmd->add_option("-o,--out", bench.out_file, "write the measurements here (input of `shardlab calibrate`)");
    cmd->add_flag("--json", bench.json, "print the measurements as JSON");
  };
  auto* bench_coll_cmd = bench_cmd->add_subcommand("collectives", "Collectives over sizes, nccl-tests style");
  bench_coll_cmd->add_option("--backend", bench.backend, "gloo (CPUs, TCP on loopback) or nccl (GPUs)")
      ->required()
      ->check(CLI::IsMember({"gloo", "nccl"}));
  bench_coll_cmd->add_option("--op", bench.ops, "collectives (default: all five)")
      ->delimiter(',')
      ->check(CLI::IsMember({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"}));
  bench_coll_cmd->add_option("--sizes", bench.sizes, "a size or a range, e.g. 8B:1GiB (powers of two)");
  add_bench_options(bench_coll_cmd);
  auto* bench_gemm_cmd =
      bench_cmd->add_subcommand("gemm", "GEMMs over shapes and streaming copies: FLOP/s, efficiency");
  bench_gemm_cmd->add_option("--backend", bench.backend, "cpu (Eigen, float32) or cuda (cuBLAS, bfloat16)")
      ->required()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  bench_gemm_cmd->add_option("--run", bench.run_file, "also measure the per-device GEMMs of this run's plan");
  bench_gemm_cmd->add_option("--peak", bench.peak, "FLOP/s the efficiency is against (default: the best measured)")
      ->check(FiniteNumber(0, true));
  add_bench_options(bench_gemm_cmd);

  cli::CalibrateArgs calibrate;
  auto* calibrate_cmd = app.add_subcommand(
      "calibrate", "Fit latency, bandwidth and GEMM efficiency to measurements (robust least squares)");
  calibrate_cmd
      ->add_option("measurements", calibrate.measurement_files,
                   "files written by `shardlab bench -o` (with --check-profile: by bench/gpu/kernels.py)")
      ->required();
  auto* calibrate_out =
      calibrate_cmd->add_option("-o,--out", calibrate.out_file, "write the calibration file here (required to fit)");
  auto* calibrate_cluster =
      calibrate_cmd->add_option("--cluster", calibrate.cluster_file, "cluster file whose device profile to check");
  auto* calibrate_check =
      calibrate_cmd
          ->add_flag("--check-profile", calibrate.check_profile,
                     "check --cluster's device profile against kernel micro-benchmarks instead of fitting: errors per "
                     "kernel family")
          ->needs(calibrate_cluster)
          ->excludes(calibrate_out);
  calibrate_cluster->needs(calibrate_check);
  calibrate_cmd->add_flag("--json", calibrate.json, "print the calibration (or the check) as JSON");

  cli::ValidateRunArgs validate_run;
  auto* validate_run_cmd =
      app.add_subcommand("validate-run", "Execute a run's plan for real and report the simulator's error");
  validate_run_cmd->add_option("run", validate_run.run_file, "run file (JSON)")->required();
  validate_run_cmd->add_option("--backend", validate_run.backend, "gloo (CPU ranks) or nccl (one GPU per rank)")
      ->check(CLI::IsMember({"gloo", "nccl"}));
  validate_run_cmd->add_option("--ranks", validate_run.ranks, "ranks (default and only choice: the run's devices)")
      ->check(CLI::Range(1, 64));
  validate_run_cmd->add_option("--calibration", validate_run.calibration_file,
                               "calibration file applied to the run's cluster");
  validate_run_cmd->add_option("--warmup", validate_run.warmup, "warm-up steps")->check(CLI::Range(0, 100));
  validate_run_cmd->add_option("--steps", validate_run.steps, "measured steps (the median is reported)")
      ->check(CLI::Range(1, 100));
  validate_run_cmd->add_option("-o,--out", validate_run.out_file, "write the error report (JSON) here");
  validate_run_cmd->add_option("--trace-measured", validate_run.measured_trace_file,
                               "write the measured step as a Chrome/Perfetto trace");
  validate_run_cmd->add_option("--trace-simulated", validate_run.simulated_trace_file,
                               "write the simulated step as a Chrome/Perfetto trace");
  validate_run_cmd->add_flag("--json", validate_run.json, "print the report as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; a usage mistake is one line like every other error.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "shardlab: error: " << shardlab::OneLine(e.what()) << " (see --help)\n";
    return kUsageError;
  }

  // Warnings and log lines start on a line of their own, not after a progress bar.
  shardlab::SetWarningHandler([print = shardlab::SetWarningHandler(nullptr)](const std::string& message) {
    cli::Progress::Interrupt();
    print(message);
  });
  auto logger = std::make_shared<spdlog::logger>("shardlab", std::make_shared<ProgressAwareStderrSink>());
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%l] %v");

  try {
    if (*simulate_cmd) return cli::Simulate(simulate);
    if (*graph_cmd) return cli::GraphCommand(graph);
    if (*models_cmd) return cli::Models();
    if (*layout_cmd) return cli::Layout(layout);
    if (*redistribute_cmd) return cli::Redistribute(redistribute);
    if (*devices_cmd) return cli::Devices(devices);
    if (*collective_cmd) return cli::CollectiveCommand(collective);
    if (*validate_cmd) return cli::Validate(validate);
    if (*tune_cmd) return cli::TuneFusion(tune);
    if (*sweep_cmd) return cli::Sweep(sweep);
    if (*search_cmd) return cli::Search(search);
    if (*compare_cmd) return cli::Compare(compare);
    if (*bench_cmd) {
      bench.what = *bench_gemm_cmd ? "gemm" : "collectives";
      return cli::Bench(bench);
    }
    if (*calibrate_cmd) {
      if (!calibrate.check_profile && calibrate.out_file.empty()) {
        std::cerr << "shardlab: error: calibrate: --out is required to fit a calibration (or --check-profile to "
                     "check one; see --help)\n";
        return kUsageError;
      }
      return cli::Calibrate(calibrate);
    }
    if (*validate_run_cmd) return cli::ValidateRun(validate_run);
  } catch (const shardlab::Stopped&) {
    return shardlab::StopExitCode();
  } catch (const std::exception& e) {
    std::cerr << "shardlab: error: " << shardlab::OneLine(e.what()) << "\n";
    return kUserError;
  }
  return kUsageError;
}
