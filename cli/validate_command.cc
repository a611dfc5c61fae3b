// `shardlab validate DIR`: simulate every case of a folder of published
// results (training runs with their TFLOP/s per GPU, collectives with their
// bus bandwidth) and print predicted against published with the error per
// case and the median. Cluster profiles are the shipped ones, never fitted.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/run_evaluation.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "core/report/run_summary.h"
#include "core/util/child_jobs.h"
#include "core/util/json_reader.h"
#include "core/util/paths.h"
#include "core/util/statistics.h"
#include "sim/simulate.h"

namespace shardlab::cli {
namespace {

struct Case {
  std::string name;
  std::string metric;
  double published = 0;
  double predicted = 0;
  double step_seconds = 0;  // runs: the simulated step
  bool is_run = false;
};

struct Prediction {
  double value = 0;
  double step_seconds = 0;
};

// TFLOP/s per device counting recomputation, as Megatron-LM reports it.
Prediction SimulateRun(const JsonNode& node, const std::string& engine) {
  const PreparedRun prepared = Prepare(ReadRunSpec(node));
  const RunSpec& run = prepared.run;
  const StepResult result = sim::SimulateStep(prepared, ParseEngine(engine));
  const RunSummary summary = SummarizeRun(run, prepared.graph);
  return {summary.step_flops / result.step_seconds / static_cast<double>(run.parallel.device_num) / 1e12,
          result.step_seconds};
}

// Bus bandwidth in GB/s of one collective, nccl-tests' convention.
double SimulateCollective(const JsonNode& node) {
  ObjectReader r(node);
  const auto cluster_node = r.Required("cluster");
  const std::string path = ResolveRelativeTo(node.file(), cluster_node.AsString());
  const Collective op = ParseCollective(r.Required("op").AsEnum({"allreduce", "allgather", "reducescatter"}));
  const int64_t ranks = r.RequiredInt("ranks", 2, 4096);
  const int64_t stride = r.Int("stride", 1, 1, 4096);
  const double bytes = ReadQuantity(r.Required("bytes"), Quantity::kBytes);
  r.Finish();
  const nlohmann::json doc = ReadJsonFile(path);
  const ClusterSpec cluster = ReadClusterSpec(JsonNode(doc, path));
  const GroupPlacement placement = PlaceStridedGroup(0, ranks, stride, cluster);
  const double per_rank = op == Collective::kAllGather ? bytes / static_cast<double>(ranks) : bytes;
  const double t =
      CollectiveSeconds(op, ChooseAlgorithm(op, per_rank, placement, cluster), per_rank, placement, cluster);
  const double n = static_cast<double>(ranks);
  const double factor = op == Collective::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
  return bytes / t * factor / 1e9;
}

// Reads a case; with `predict`, also simulates it with `engine`.
Case RunCase(const std::string& file, const std::string& engine, bool predict) {
  const nlohmann::json doc = ReadJsonFile(file);
  const JsonNode root(doc, file);
  ObjectReader r(root);
  Case c;
  c.name = r.Required("name").AsString();
  const auto published = r.Required("published");
  const auto run = r.Optional("run");
  const auto collective = r.Optional("collective");
  r.Finish();
  ObjectReader p(published);
  c.metric = p.Required("metric").AsEnum({"tflops_per_device_with_recompute", "busbw_gbps"});
  c.published = p.Required("value").AsNumber(1e-9, 1e12);
  p.Finish();
  if (run.has_value() == collective.has_value())
    root.Fail("a validation case has either a \"run\" or a \"collective\"");
  if (run && c.metric != "tflops_per_device_with_recompute")
    published.Child("metric").Fail("runs report tflops_per_device_with_recompute");
  if (collective && c.metric != "busbw_gbps") published.Child("metric").Fail("collectives report busbw_gbps");
  c.is_run = run.has_value();
  if (predict) {
    const Prediction p = run ? SimulateRun(*run, engine) : Prediction{SimulateCollective(*collective), 0};
    c.predicted = p.value;
    c.step_seconds = p.step_seconds;
  }
  return c;
}

// SimGrid allows one engine per process: each case runs in a child process.
Case PredictInChild(const std::string& file, const std::string& engine) {
  const auto results = RunInChildProcesses(
      {0},
      [&](size_t) {
        const Case c = RunCase(file, engine, true);
        return nlohmann::json{{"predicted", c.predicted}, {"step_seconds", c.step_seconds}}.dump();
      },
      ChildJobOptions{});
  if (results[0].status != ChildJobResult::Status::kOk) throw std::runtime_error(results[0].output);
  Case c = RunCase(file, engine, false);
  const nlohmann::json j = nlohmann::json::parse(results[0].output);
  c.predicted = j.at("predicted");
  c.step_seconds = j.at("step_seconds");
  return c;
}

}  // namespace

int Validate(const ValidateArgs& args) {
  std::vector<std::string> files;
  if (!std::filesystem::is_directory(args.folder))
    throw std::runtime_error(args.folder + ": not a folder of validation cases");
  for (const auto& entry : std::filesystem::directory_iterator(args.folder))
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error(args.folder + ": no validation cases (*.json)");
  if (!args.json) {
    std::cout << fmt::format("# {} cases, engine {} (collectives in closed form)\n", files.size(), args.engine);
    std::cout << fmt::format("# {:<34} {:<34} {:>10} {:>10} {:>8}\n", "case", "metric", "published", "predicted",
                             "error");
  }
  std::vector<double> errors;
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& file : files) {
    const bool in_child = RunCase(file, args.engine, false).is_run && args.engine == "simgrid";
    const Case c = in_child ? PredictInChild(file, args.engine) : RunCase(file, args.engine, true);
    const double error = 100 * (c.predicted - c.published) / c.published;
    errors.push_back(std::fabs(error));
    nlohmann::json j = {{"name", c.name},
                        {"file", file},
                        {"metric", c.metric},
                        {"published", c.published},
                        {"predicted", c.predicted},
                        {"error_percent", error}};
    if (c.is_run) j["step_seconds"] = c.step_seconds;
    cases.push_back(j);
    if (!args.json)
      std::cout << fmt::format("  {:<34} {:<34} {:>10.1f} {:>10.1f} {:>+7.1f}%\n", c.name, c.metric, c.published,
                               c.predicted, error);
  }
  const double median = Median(errors);
  if (args.json) {
    std::cout << nlohmann::json{{"engine", args.engine}, {"cases", cases}, {"median_absolute_error_percent", median}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("# median absolute error {:.1f}% over {} cases\n", median, errors.size());
  return 0;
}

}  // namespace shardlab::cli
