// `shardlab sweep SWEEP.json`: simulates every point of a grid of variants
// of one run (clusters x models x parallel settings) and writes one table.
// A sweep file names the base run, the grid (a key of the run file, dotted
// for nested keys, with the list of values it takes) and the engine. Points
// run in child processes on every core, and across ranks under `mpirun`.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_evaluation.h"
#include "core/config/sweep_config.h"
#include "core/util/atomic_file.h"
#include "core/util/interrupt.h"
#include "core/util/json_reader.h"

namespace shardlab::cli {
namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

const char* kMetrics[] = {"step_seconds",
                          "samples_per_second",
                          "tokens_per_second",
                          "tflops_per_device",
                          "mfu",
                          "exposed_communication_seconds",
                          "bubble_fraction",
                          "peak_memory_gib",
                          "out_of_memory"};

}  // namespace

int Sweep(const SweepArgs& args) {
  const double start = SteadySeconds();
  exec::MpiWorld world;
  SweepSpec spec = LoadSweepFile(args.sweep_file);
  if (!args.engine.empty()) spec.engine = args.engine;
  if (!args.out_file.empty()) spec.out_file = args.out_file;
  const nlohmann::json base = ReadJsonFile(spec.run_file);
  const size_t points = spec.point_count();
  CheckGridKeys(spec, base);

  StopOnInterrupt();
  Progress progress("sweep", points);
  EvaluationOptions options;
  options.jobs = args.jobs > 0 ? static_cast<int>(args.jobs) : AvailableCores();
  options.start_seconds = start;
  options.progress = &progress;
  options.name = [&](size_t i) { return spec.PointName(i); };
  const auto results = EvaluateEverywhere(
      points,
      [&](size_t i) {
        const nlohmann::json doc = spec.PointRun(base, i);
        const RunSpec run = ReadRunSpec(JsonNode(doc, spec.run_file));
        nlohmann::json r = EvaluateRun(run, ParseEngine(spec.engine));
        double peak = 0;
        for (const auto& s : r.at("stages")) peak = std::max(peak, s.at("memory").at("peak").get<double>());
        r["peak_memory_gib"] = peak / (1 << 30);
        return r.dump();
      },
      options, world);
  progress.Finish();
  if (!world.root()) return 0;

  // One row per point: the grid values, then the metrics or the error.
  nlohmann::json rows = nlohmann::json::array();
  std::string csv;
  for (const SweepAxis& axis : spec.grid) csv += CsvField(axis.key) + ",";
  for (const char* m : kMetrics) csv += std::string(m) + ",";
  csv += "error\n";
  size_t failed = 0;
  for (size_t i = 0; i < points; ++i) {
    nlohmann::json row;
    const auto coords = spec.Coordinates(i);
    for (size_t a = 0; a < spec.grid.size(); ++a) {
      row[spec.grid[a].key] = spec.grid[a].values[coords[a]];
      csv += CsvField(GridValueText(spec.grid[a].values[coords[a]])) + ",";
    }
    const ChildJobResult& r = results[i];
    if (r.status == ChildJobResult::Status::kOk) {
      const nlohmann::json result = nlohmann::json::parse(r.output);
      for (const char* m : kMetrics) {
        row[m] = result.at(m);
        csv += GridValueText(result.at(m)) + ",";
      }
    } else {
      for ([[maybe_unused]] const char* m : kMetrics) csv += ",";
      ++failed;
    }
    const std::string error = r.status == ChildJobResult::Status::kFailed   ? r.output
                              : r.status == ChildJobResult::Status::kNotRun ? "not run (interrupted)"
                                                                            : "";
    if (!error.empty()) row["error"] = error;
    csv += CsvField(error) + "\n";
    rows.push_back(row);
  }
  std::cout << csv;
  if (!spec.out_file.empty()) {
    const bool json = std::filesystem::path(spec.out_file).extension() == ".json";
    WriteFileAtomically(spec.out_file, json ? rows.dump(2) + "\n" : csv);
    std::cerr << fmt::format("wrote {} ({} points, {} failed, {:.1f} s)\n", spec.out_file, points, failed,
                             SteadySeconds() - start);
  }
  if (StopRequested()) return StopExitCode();
  if (failed == points)
    throw std::runtime_error(fmt::format("every point of the sweep failed; the first: {}", results[0].output));
  return 0;
}

}  // namespace shardlab::cli
