// `shardlab validate DIR`: simulate every case of a folder of published
// results (training runs with their step time, throughput or TFLOP/s per
// device; collectives with their bus bandwidth or time, at one size or over a
// sweep of sizes) and print predicted against published, worst first, with the
// median and largest error per source and per metric and the runs reported
// out of memory. Cluster profiles are the shipped ones, never fitted per case.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_evaluation.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "core/report/run_summary.h"
#include "core/util/child_jobs.h"
#include "core/util/engine_limit_error.h"
#include "core/util/json_reader.h"
#include "core/util/paths.h"
#include "core/util/statistics.h"
#include "core/util/warning.h"
#include "sim/simulate.h"

namespace shardlab::cli {
namespace {

// What a case's source reports, with the unit it is printed in.
const std::vector<std::string> kRunMetrics = {"tflops_per_device_with_recompute", "tflops_per_device", "step_seconds",
                                              "tokens_per_second_per_device"};
const std::vector<std::string> kCollectiveMetrics = {"busbw_gbps", "time_us"};

// One published figure against its prediction (a collective sweep gives one per size).
struct Row {
  std::string name;
  std::string source;
  std::string metric;
  double published = 0;
  double predicted = 0;
  double step_seconds = 0;  // runs: the simulated step
  bool out_of_memory = false;
  std::string file;
  std::string not_simulated;  // why the engine declined the run (EngineLimitError), else ""

  double error() const { return 100 * (predicted - published) / published; }
};

// A run's figures, every run metric at once.
struct RunFigures {
  std::map<std::string, double> metrics;
  double step_seconds = 0;
  bool out_of_memory = false;
};

RunFigures SimulateRun(const JsonNode& node, const std::string& engine) {
  const PreparedRun prepared = Prepare(ReadRunSpec(node));
  const RunSpec& run = prepared.run;
  const StepResult result = sim::SimulateStep(prepared, ParseEngine(engine));
  const RunSummary summary = SummarizeRun(run, prepared.graph);
  const double devices = static_cast<double>(run.parallel.device_num), step = result.step_seconds;
  RunFigures f;
  f.step_seconds = step;
  f.out_of_memory = result.out_of_memory;
  f.metrics["tflops_per_device_with_recompute"] = summary.step_flops / step / devices / 1e12;
  f.metrics["tflops_per_device"] = prepared.plan.model_flops / step / devices / 1e12;
  f.metrics["step_seconds"] = step;
  f.metrics["tokens_per_second_per_device"] = static_cast<double>(prepared.plan.tokens_per_step) / step / devices;
  return f;
}

// A collective case's group, cluster and algorithm (NCCL_ALGO when the source pins one).
struct CollectiveCase {
  ClusterSpec cluster;
  Collective op = Collective::kAllReduce;
  int64_t ranks = 2;
  int64_t stride = 1;
  std::map<Collective, CollectiveAlgorithm> algorithm;
  std::optional<double> bytes;  // one size; absent: the published sweep's sizes
};

CollectiveCase ReadCollective(const JsonNode& node) {
  ObjectReader r(node);
  CollectiveCase c;
  const std::string path = ResolveRelativeTo(node.file(), r.Required("cluster").AsString());
  c.op = ParseCollective(r.Required("op").AsEnum({"allreduce", "allgather", "reducescatter", "broadcast"}));
  c.ranks = r.RequiredInt("ranks", 2, 4096);
  c.stride = r.Int("stride", 1, 1, 4096);
  if (const auto a = r.Optional("algorithm"))
    c.algorithm[c.op] =
        ParseAlgorithm(a->AsEnum({"ring", "double_binary_tree", "nvls", "nvls_tree", "full_mesh", "hierarchical"}));
  if (const auto b = r.Optional("bytes")) c.bytes = ReadQuantity(*b, Quantity::kBytes);
  r.Finish();
  const nlohmann::json doc = ReadJsonFile(path);
  c.cluster = ReadClusterSpec(JsonNode(doc, path));
  return c;
}

// `metric` of the collective over a buffer of nccl-tests' `size`.
double PredictCollective(const CollectiveCase& c, const std::string& metric, double size) {
  const GroupPlacement placement = PlaceStridedGroup(0, c.ranks, c.stride, c.cluster);
  const double per_rank = c.op == Collective::kAllGather ? size / static_cast<double>(c.ranks) : size;
  const double t = CollectiveSeconds(c.op, ChooseAlgorithm(c.op, per_rank, placement, c.cluster, c.algorithm), per_rank,
                                     placement, c.cluster);
  if (metric == "time_us") return t * 1e6;
  return size / t * BusBandwidthFactor(c.op, c.ranks) / 1e9;
}

// Reads a case into its rows; with `predict`, simulates them with `engine`.
std::vector<Row> RunCase(const std::string& file, const std::string& engine, bool predict) {
  const nlohmann::json doc = ReadJsonFile(file);
  const JsonNode root(doc, file);
  ObjectReader r(root);
  Row base;
  base.file = file;
  base.name = r.Required("name").AsString();
  base.source = r.Required("source").AsString();
  r.Optional("comment");
  const auto published = r.Required("published");
  const auto run = r.Optional("run");
  const auto collective = r.Optional("collective");
  r.Finish();
  if (run.has_value() == collective.has_value())
    root.Fail("a validation case has either a \"run\" or a \"collective\"");
  ObjectReader p(published);
  base.metric = p.Required("metric").AsEnum(run ? kRunMetrics : kCollectiveMetrics);
  const auto value = p.Optional("value");
  const auto sizes = p.Optional("sizes");
  p.Finish();
  std::vector<Row> rows;
  if (run) {
    if (!value) published.Fail("a run case publishes one \"value\"");
    base.published = value->AsNumber(1e-9, 1e15);
    if (predict) {
      try {
        const RunFigures f = SimulateRun(*run, engine);
        base.predicted = f.metrics.at(base.metric);
        base.step_seconds = f.step_seconds;
        base.out_of_memory = f.out_of_memory;
      } catch (const EngineLimitError& e) {
        base.not_simulated = e.what();
      }
    }
    return {base};
  }
  const CollectiveCase c = ReadCollective(*collective);
  if (c.bytes.has_value() == sizes.has_value())
    published.Fail("a collective case publishes one \"value\" at its collective's \"bytes\", or \"sizes\" without it");
  if (c.bytes) {
    if (!value) published.Fail("a collective at one size publishes one \"value\"");
    base.published = value->AsNumber(1e-9, 1e15);
    if (predict) base.predicted = PredictCollective(c, base.metric, *c.bytes);
    return {base};
  }
  if (value) published.Child("value").Fail("a sweep publishes \"sizes\": [[bytes, value], ...] only");
  for (const JsonNode& entry : sizes->AsArray()) {
    const auto pair = entry.AsArray();
    if (pair.size() != 2) entry.Fail("expected [bytes, value], e.g. [1048576, 27.4]");
    Row row = base;
    const double bytes = pair[0].AsNumber(1, 1e13);
    row.name = fmt::format("{}@{}", base.name, FormatQuantity(bytes, Quantity::kBytes));
    row.published = pair[1].AsNumber(1e-9, 1e15);
    if (predict) row.predicted = PredictCollective(c, base.metric, bytes);
    rows.push_back(row);
  }
  if (rows.empty()) sizes->Fail("expected at least one [bytes, value]");
  return rows;
}

// SimGrid allows one engine per process: a run case runs in a child process.
Row PredictInChild(const std::string& file, const std::string& engine) {
  const auto results = RunInChildProcesses(
      {0},
      [&](size_t) {
        const Row row = RunCase(file, engine, true).front();
        return nlohmann::json{{"predicted", row.predicted},
                              {"step_seconds", row.step_seconds},
                              {"out_of_memory", row.out_of_memory},
                              {"not_simulated", row.not_simulated}}
            .dump();
      },
      ChildJobOptions{});
  if (results[0].status != ChildJobResult::Status::kOk) throw std::runtime_error(results[0].output);
  Row row = RunCase(file, engine, false).front();
  const nlohmann::json j = nlohmann::json::parse(results[0].output);
  row.predicted = j.at("predicted");
  row.step_seconds = j.at("step_seconds");
  row.out_of_memory = j.at("out_of_memory");
  row.not_simulated = j.at("not_simulated");
  return row;
}

// Median and largest |error| of a group of rows, and its runs out of memory.
struct Summary {
  std::string group;
  size_t count = 0;
  double median = 0, max = 0;
  size_t out_of_memory = 0;
};

std::vector<Summary> Summarize(const std::vector<Row>& rows, std::string (*key)(const Row&)) {
  std::map<std::string, std::vector<const Row*>> groups;
  for (const Row& row : rows) groups[key(row)].push_back(&row);
  std::vector<Summary> out;
  for (const auto& [group, members] : groups) {
    std::vector<double> errors;
    Summary s{group, members.size()};
    for (const Row* row : members) {
      errors.push_back(std::fabs(row->error()));
      s.out_of_memory += row->out_of_memory;
    }
    s.median = Median(errors);
    s.max = *std::max_element(errors.begin(), errors.end());
    out.push_back(s);
  }
  return out;
}

std::string SourceOf(const Row& row) { return row.source; }
std::string MetricOf(const Row& row) { return row.metric; }
// A training run (a published step, throughput or TFLOP/s) or a collective (nccl-tests' time or busbw).
std::string KindOf(const Row& row) { return row.step_seconds > 0 ? "training" : "collective"; }

nlohmann::json ToJson(const Summary& s) {
  return {{"group", s.group},
          {"cases", s.count},
          {"median_absolute_error_percent", s.median},
          {"max_absolute_error_percent", s.max},
          {"out_of_memory", s.out_of_memory}};
}

void PrintText(const ValidateArgs& args, size_t cases, const std::vector<Row>& rows, const std::vector<Row>& declined,
               const std::vector<Summary>& sources, const std::vector<Summary>& metrics,
               const std::vector<Summary>& kinds) {
  std::cout << fmt::format("# {} cases ({} figures), engine {} (collectives in closed form), worst first\n", cases,
                           rows.size(), args.engine);
  std::cout << fmt::format("# {:<52} {:<32} {:>10} {:>10} {:>8}\n", "case", "metric", "published", "predicted",
                           "error");
  for (const Row& row : rows)
    std::cout << fmt::format("  {:<52} {:<32} {:>10.4g} {:>10.4g} {:>+7.1f}%{}\n", row.name, row.metric, row.published,
                             row.predicted, row.error(), row.out_of_memory ? "  out of memory" : "");
  auto table = [](const char* title, const std::vector<Summary>& groups) {
    std::cout << fmt::format("# {:<52} {:>6} {:>10} {:>10} {:>14}\n", title, "cases", "median|e|", "max|e|",
                             "out of memory");
    for (const Summary& s : groups)
      std::cout << fmt::format("  {:<52} {:>6} {:>9.1f}% {:>9.1f}% {:>14}\n", s.group, s.count, s.median, s.max,
                               s.out_of_memory);
  };
  table("source", sources);
  table("metric", metrics);
  table("kind", kinds);
  for (const Row& row : declined)
    std::cout << fmt::format("# not simulated by {}: {}: {}\n", args.engine, row.name, row.not_simulated);
}

void PrintMarkdown(const std::vector<Row>& rows, const std::vector<Row>& declined, const std::vector<Summary>& sources,
                   const std::vector<Summary>& metrics, const std::vector<Summary>& kinds) {
  std::cout << "| Source | Figures | Median abs. error | Max abs. error | Reported out of memory |\n"
               "| --- | ---: | ---: | ---: | ---: |\n";
  for (const Summary& s : sources)
    std::cout << fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} |\n", s.group, s.count, s.median, s.max,
                             s.out_of_memory);
  std::cout << "\n| Metric | Figures | Median abs. error | Max abs. error |\n| --- | ---: | ---: | ---: |\n";
  for (const Summary& s : metrics)
    std::cout << fmt::format("| {} | {} | {:.1f}% | {:.1f}% |\n", s.group, s.count, s.median, s.max);
  std::cout << "\n| Kind | Figures | Median abs. error | Max abs. error | Reported out of memory |\n"
               "| --- | ---: | ---: | ---: | ---: |\n";
  for (const Summary& s : kinds)
    std::cout << fmt::format("| {} | {} | {:.1f}% | {:.1f}% | {} |\n", s.group, s.count, s.median, s.max,
                             s.out_of_memory);
  std::cout << "\n| Case | Source | Metric | Published | Predicted | Error |\n"
               "| --- | --- | --- | ---: | ---: | ---: |\n";
  for (const Row& row : rows)
    std::cout << fmt::format("| {}{} | {} | {} | {:.4g} | {:.4g} | {:+.1f}% |\n", row.name,
                             row.out_of_memory ? " (out of memory)" : "", row.source, row.metric, row.published,
                             row.predicted, row.error());
  if (declined.empty()) return;
  std::cout << "\nNot simulated (the engine declined their size):\n\n";
  for (const Row& row : declined) std::cout << fmt::format("- {}: {}\n", row.name, row.not_simulated);
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
  for (const auto& file : files) RunCase(file, args.engine, false);  // a malformed case fails before anything runs
  std::vector<Row> rows;
  Progress progress(fmt::format("validating with {}", args.engine), files.size());
  for (const auto& file : files) {
    if (args.engine == "simgrid" && ReadJsonFile(file).contains("run")) {
      rows.push_back(PredictInChild(file, args.engine));
      progress.Done(std::filesystem::path(file).stem().string(), "");
      continue;
    }
    for (Row& row : RunCase(file, args.engine, true)) rows.push_back(std::move(row));
    progress.Done(std::filesystem::path(file).stem().string(), "");
  }
  progress.Finish();
  // Runs the engine declined for their size are listed apart, outside the summaries.
  std::vector<Row> declined;
  for (const Row& row : rows)
    if (!row.not_simulated.empty()) {
      Warn(fmt::format("{}: not simulated: {}", row.file, row.not_simulated));
      declined.push_back(row);
    }
  std::erase_if(rows, [](const Row& row) { return !row.not_simulated.empty(); });
  if (rows.empty())
    throw std::runtime_error(fmt::format("{}: the {} engine simulated no case; {}: {}", args.folder, args.engine,
                                         declined.front().name, declined.front().not_simulated));
  std::vector<Summary> sources = Summarize(rows, &SourceOf), metrics = Summarize(rows, &MetricOf),
                       kinds = Summarize(rows, &KindOf);
  const Summary overall = Summarize(rows, [](const Row&) { return std::string("all"); }).front();
  if (args.json) {
    nlohmann::json cases = nlohmann::json::array();
    for (const Row& row : rows) {
      nlohmann::json j = {{"name", row.name},
                          {"source", row.source},
                          {"file", row.file},
                          {"metric", row.metric},
                          {"published", row.published},
                          {"predicted", row.predicted},
                          {"error_percent", row.error()}};
      if (row.step_seconds > 0) {
        j["step_seconds"] = row.step_seconds;
        j["out_of_memory"] = row.out_of_memory;
      }
      cases.push_back(j);
    }
    nlohmann::json not_simulated = nlohmann::json::array();
    for (const Row& row : declined)
      not_simulated.push_back({{"name", row.name},
                               {"source", row.source},
                               {"file", row.file},
                               {"metric", row.metric},
                               {"published", row.published},
                               {"reason", row.not_simulated}});
    nlohmann::json by_source = nlohmann::json::array(), by_metric = nlohmann::json::array(),
                   by_kind = nlohmann::json::array();
    for (const Summary& s : sources) by_source.push_back(ToJson(s));
    for (const Summary& s : metrics) by_metric.push_back(ToJson(s));
    for (const Summary& s : kinds) by_kind.push_back(ToJson(s));
    std::cout << nlohmann::json{{"engine", args.engine},          {"cases", cases},
                                {"not_simulated", not_simulated}, {"by_source", by_source},
                                {"by_metric", by_metric},         {"by_kind", by_kind},
                                {"all", ToJson(overall)},         {"median_absolute_error_percent", overall.median}}
                     .dump(2)
              << "\n";
    return 0;
  }
  sources.push_back(overall);  // the tables' last row
  // The tables worst first; JSON keeps the cases' (file) order.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return std::fabs(a.error()) > std::fabs(b.error()); });
  if (args.markdown) {
    PrintMarkdown(rows, declined, sources, metrics, kinds);
    return 0;
  }
  PrintText(args, files.size(), rows, declined, sources, metrics, kinds);
  std::cout << fmt::format("# median absolute error {:.1f}% over {} figures\n", overall.median, rows.size());
  return 0;
}

}  // namespace shardlab::cli
