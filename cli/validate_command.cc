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
#include "core/ops/graph_layouts.h"
#include "core/plan/lowering.h"
#include "core/report/run_summary.h"
#include "core/util/child_jobs.h"
#include "core/util/json_reader.h"

namespace shardlab::cli {
namespace {

struct Case {
  std::string name;
  std::string metric;
  double published = 0;
  double predicted = 0;
  bool is_run = false;
};

// TFLOP/s per device counting recomputation, as Megatron-LM reports it.
double SimulateRun(const JsonNode& node, const std::string& engine) {
  const RunSpec run = ReadRunSpec(node);
  const Graph graph = BuildRunGraph(run);
  const Plan plan = LowerToPlan(run, graph, InferGraphLayouts(graph, run.parallel.devices_per_stage()));
  const StepResult result = SimulateStep(plan, run.cluster, engine);
  const RunSummary summary = SummarizeRun(run, graph);
  return summary.step_flops / result.step_seconds / static_cast<double>(run.parallel.device_num) / 1e12;
}

// Bus bandwidth in GB/s of one collective, nccl-tests' convention.
double SimulateCollective(const JsonNode& node) {
  ObjectReader r(node);
  const auto cluster_node = r.Required("cluster");
  const std::string path =
      (std::filesystem::path(node.file()).parent_path() / cluster_node.AsString()).lexically_normal().string();
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
  if (predict) c.predicted = run ? SimulateRun(*run, engine) : SimulateCollective(*collective);
  return c;
}

// SimGrid allows one engine per process: each case runs in a child process.
double PredictInChild(const std::string& file, const std::string& engine) {
  const auto results = RunInChildProcesses(
      {0}, [&](size_t) { return fmt::format("{:.17g}", RunCase(file, engine, true).predicted); }, ChildJobOptions{});
  if (results[0].status != ChildJobResult::Status::kOk) throw std::runtime_error(results[0].output);
  return std::stod(results[0].output);
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
  std::cout << fmt::format("# {} cases, engine {} (collectives in closed form)\n", files.size(), args.engine);
  std::cout << fmt::format("# {:<34} {:<34} {:>10} {:>10} {:>8}\n", "case", "metric", "published", "predicted",
                           "error");
  std::vector<double> errors;
  for (const auto& file : files) {
    Case c = RunCase(file, args.engine, false);
    c.predicted = c.is_run && args.engine == "simgrid" ? PredictInChild(file, args.engine)
                                                       : RunCase(file, args.engine, true).predicted;
    const double error = 100 * (c.predicted - c.published) / c.published;
    errors.push_back(std::fabs(error));
    std::cout << fmt::format("  {:<34} {:<34} {:>10.1f} {:>10.1f} {:>+7.1f}%\n", c.name, c.metric, c.published,
                             c.predicted, error);
  }
  std::vector<double> sorted = errors;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  std::cout << fmt::format("# median absolute error {:.1f}% over {} cases\n", median, n);
  return 0;
}

}  // namespace shardlab::cli
