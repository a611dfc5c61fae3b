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
#include "core/util/atomic_file.h"
#include "core/util/interrupt.h"
#include "core/util/json_reader.h"
#include "core/util/paths.h"

namespace shardlab::cli {
namespace {

constexpr size_t kMaxPoints = 100000;

struct Axis {
  std::string key;                         // "cluster", "model" or a dotted key of the run file
  std::vector<nlohmann::json> values;      // as the sweep file writes them, for the table
  std::vector<nlohmann::json> run_values;  // as the run file gets them (absolute file paths)
};

struct SweepSpec {
  std::string run_file;
  std::vector<Axis> grid;
  std::string engine = "analytical";
  std::string out_file;
};

SweepSpec ReadSweep(const std::string& path) {
  namespace fs = std::filesystem;
  const nlohmann::json doc = ReadJsonFile(path);
  const JsonNode root(doc, path);
  ObjectReader r(root);
  SweepSpec spec;
  spec.run_file = ResolveRelativeTo(path, r.Required("run").AsString());
  const JsonNode grid = r.Required("grid");
  spec.engine = r.Required("engine").AsEnum({"analytical", "simgrid"});
  const std::string out = r.String("out", "");
  if (!out.empty()) spec.out_file = ResolveRelativeTo(path, out);
  r.Finish();
  if (!grid.json().is_object() || grid.json().empty())
    grid.Fail("expected an object of run-file keys, each with a list of values, got " + grid.Describe());
  size_t points = 1;
  for (const auto& [key, values] : grid.json().items()) {
    if (key == "comment") continue;
    const JsonNode node = grid.Child(key);
    if (!values.is_array() || values.empty()) node.Fail("expected a non-empty list of values, got " + node.Describe());
    Axis axis{key, values.get<std::vector<nlohmann::json>>(), {}};
    for (size_t i = 0; i < values.size(); ++i) {
      nlohmann::json v = values[i];
      if (key == "cluster" || key == "model") {
        if (!v.is_string()) node.Element(i).Fail("expected a file path (relative to the sweep file)");
        v = fs::absolute(ResolveRelativeTo(path, v.get<std::string>())).lexically_normal().string();
      }
      axis.run_values.push_back(v);
    }
    points *= axis.values.size();
    if (points > kMaxPoints) node.Fail(fmt::format("the grid has more than {} points", kMaxPoints));
    spec.grid.push_back(std::move(axis));
  }
  return spec;
}

// Point `index` of the grid: one value per axis, the last axis fastest.
std::vector<size_t> Coordinates(const SweepSpec& spec, size_t index) {
  std::vector<size_t> c(spec.grid.size());
  for (size_t a = spec.grid.size(); a-- > 0;) {
    c[a] = index % spec.grid[a].values.size();
    index /= spec.grid[a].values.size();
  }
  return c;
}

// The run document with a grid point's values set; absolute file paths
// replace the run's relative cluster and model.
nlohmann::json PointRun(const SweepSpec& spec, const nlohmann::json& base, const std::vector<size_t>& coords) {
  nlohmann::json doc = base;
  for (size_t a = 0; a < spec.grid.size(); ++a) {
    nlohmann::json* node = &doc;
    const std::string& key = spec.grid[a].key;
    size_t begin = 0;
    while (true) {
      const size_t dot = key.find('.', begin);
      const std::string part = key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
      if (dot == std::string::npos) {
        (*node)[part] = spec.grid[a].run_values[coords[a]];
        break;
      }
      node = &(*node)[part];
      begin = dot + 1;
    }
  }
  return doc;
}

std::string Cell(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

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

// A grid key the run file does not have fails every point alike: it is the
// sweep file's error, reported there before anything runs.
void CheckGridKeys(const SweepSpec& spec, const nlohmann::json& base, const std::string& sweep_file) {
  const nlohmann::json doc = PointRun(spec, base, std::vector<size_t>(spec.grid.size(), 0));
  try {
    ReadRunSpec(JsonNode(doc, spec.run_file));
  } catch (const ConfigError& e) {
    if (e.file() != spec.run_file) return;
    for (const Axis& axis : spec.grid) {
      std::string pointer = "/" + axis.key;
      std::replace(pointer.begin(), pointer.end(), '.', '/');
      if (e.pointer() == pointer && std::string(e.what()).find("unknown key") != std::string::npos) {
        const nlohmann::json sweep = ReadJsonFile(sweep_file);
        JsonNode(sweep, sweep_file).Child("grid").Child(axis.key).Fail(std::string("not a key of the run file: ") + e.what());
      }
    }
  }
}

}  // namespace

int Sweep(const SweepArgs& args) {
  const double start = SteadySeconds();
  exec::MpiWorld world;
  SweepSpec spec = ReadSweep(args.sweep_file);
  if (!args.engine.empty()) spec.engine = args.engine;
  if (!args.out_file.empty()) spec.out_file = args.out_file;
  const nlohmann::json base = ReadJsonFile(spec.run_file);
  size_t points = 1;
  for (const Axis& axis : spec.grid) points *= axis.values.size();

  CheckGridKeys(spec, base, args.sweep_file);

  StopOnInterrupt();
  Progress progress("sweep", points);
  EvaluationOptions options;
  options.jobs = args.jobs > 0 ? static_cast<int>(args.jobs) : AvailableCores();
  options.start_seconds = start;
  options.progress = &progress;
  options.name = [&](size_t i) {
    std::string name;
    const auto coords = Coordinates(spec, i);
    for (size_t a = 0; a < spec.grid.size(); ++a)
      name += (a ? " " : "") + spec.grid[a].key + "=" + Cell(spec.grid[a].values[coords[a]]);
    return name;
  };
  const auto results = EvaluateEverywhere(
      points,
      [&](size_t i) {
        const nlohmann::json doc = PointRun(spec, base, Coordinates(spec, i));
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
  for (const Axis& axis : spec.grid) csv += CsvField(axis.key) + ",";
  for (const char* m : kMetrics) csv += std::string(m) + ",";
  csv += "error\n";
  size_t failed = 0;
  for (size_t i = 0; i < points; ++i) {
    nlohmann::json row;
    const auto coords = Coordinates(spec, i);
    for (size_t a = 0; a < spec.grid.size(); ++a) {
      row[spec.grid[a].key] = spec.grid[a].values[coords[a]];
      csv += CsvField(Cell(spec.grid[a].values[coords[a]])) + ",";
    }
    const ChildJobResult& r = results[i];
    if (r.status == ChildJobResult::Status::kOk) {
      const nlohmann::json result = nlohmann::json::parse(r.output);
      for (const char* m : kMetrics) {
        row[m] = result.at(m);
        csv += Cell(result.at(m)) + ",";
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
