#include "gui/run_loader.h"

#include <filesystem>

#include "core/plan/operator_cost.h"
#include "core/util/json_reader.h"
#include "sim/simulate.h"

namespace shardlab::gui {
namespace {

std::vector<StrategyRow> StrategyRows(const RunSpec& run, const ShardedGraph& sharded) {
  const Graph& graph = sharded.graph;
  const std::vector<OpLayout>& layouts = sharded.layouts;
  std::vector<StrategyRow> rows;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    const OpLayout& l = layouts[i];
    const double seconds = OperatorComputeSeconds(graph, op, l, run.cluster, true);
    rows.push_back({static_cast<int>(i), QString::fromStdString(op.name), QString::fromStdString(op.type),
                    QString::fromStdString(StrategyToString(l.strategy)),
                    QString::fromStdString(StrategyToString({l.device_matrix})),
                    QString::fromStdString(CommunicationSummary(l)), 1e3 * seconds});
  }
  return rows;
}

// The view of a run with these layouts; its step simulated analytically
// unless given (a given result without events gets the analytical timeline).
RunView Derive(const PreparedRun& prepared, const StepResult* given) {
  const sim::TraceRequest trace{true, {}};
  RunView view;
  view.run = prepared.run;
  if (!given) {
    view.result = sim::SimulateStep(prepared, Engine::kAnalytical, trace);
  } else {
    view.result = *given;
    if (view.result.events.empty()) view.result.events = sim::SimulateStep(prepared, Engine::kAnalytical, trace).events;
  }
  view.strategies = StrategyRows(prepared.run, prepared.sharded);
  view.layouts = BuildRunLayouts(prepared.run, prepared.sharded.graph, prepared.sharded.layouts);
  view.timeline = BuildTimeline(view.result);
  AttachPassTasks(prepared.plan, &view.timeline);
  return view;
}

}  // namespace

RunView SimulateForView(const RunSpec& run) { return Derive(Prepare(run), nullptr); }

nlohmann::json SimulateDocument(const RunSpec& run, Engine engine) {
  const PreparedRun prepared = Prepare(run);
  const StepResult result = sim::SimulateStep(prepared, engine, sim::TraceRequest{true, {}});
  return {{"run", ToJson(run)},
          {"strategy_choice", ToJson(prepared.sharded.choice)},
          {"strategies", prepared.sharded.Strategies()},
          {"result", ToJson(result)}};
}

RunSpec EditRun(const RunSpec& run, const nlohmann::json& changes) {
  nlohmann::json doc = ToJson(run);
  if (changes.contains("parallel")) doc["parallel"] = changes["parallel"];
  if (changes.contains("stack")) doc["stack"] = changes["stack"];  // a preset and the keys changed beside it
  // The panel has no field for the engine (its own list chooses it): the run keeps its own.
  if (changes.contains("simulation")) doc["simulation"].update(changes["simulation"]);
  // A file chosen in the panel replaces the inline model or cluster.
  for (const char* part : {"model", "cluster"})
    if (changes.contains(part)) doc[part] = std::filesystem::absolute(changes[part].get<std::string>()).string();
  return ReadRunSpec(JsonNode(doc, run.file.empty() ? "edited run" : run.file + " (edited)"));
}

RunView ViewFromResultDocument(const nlohmann::json& doc, const std::string& source) {
  const RunSpec run = ReadRunSpec(JsonNode(doc.at("run"), source));
  StepResult result;
  try {
    result = StepResultFromJson(doc.at("result"));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(source + ": /result: not a shardlab step result (" + e.what() + ")");
  }
  // A document records the strategies it simulated; one without them is the run's own choice.
  std::vector<Strategy> strategies;
  if (doc.contains("strategies")) {
    try {
      strategies = doc.at("strategies").get<std::vector<Strategy>>();
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(source +
                               ": /strategies: expected one strategy (a list of lists of integers) per "
                               "operator (" +
                               e.what() + ")");
    }
  }
  RunView view = Derive(doc.contains("strategies") ? PrepareWithStrategies(run, strategies) : Prepare(run), &result);
  view.source = source;
  return view;
}

RunView LoadForView(const std::string& path) {
  const nlohmann::json doc = ReadJsonFile(path);
  if (doc.is_object() && doc.contains("result") && doc.contains("run")) {
    RunView view = ViewFromResultDocument(doc, path);
    view.from_result = true;
    return view;
  }
  RunView view = SimulateForView(LoadRunFile(path));
  view.source = path;
  return view;
}

}  // namespace shardlab::gui
