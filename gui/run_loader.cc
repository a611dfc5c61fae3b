#include "gui/run_loader.h"

#include "core/analytical/analytical_engine.h"
#include "core/cost/compute_cost.h"
#include "core/plan/lowering.h"
#include "core/search/search.h"
#include "core/util/json_reader.h"
#include "sim/step_engine.h"

namespace shardlab::gui {
namespace {

// The layouts of a view: the strategies a document fixes (applied as
// configured ones, no search), else those of `mode` ("": the run's own).
std::vector<OpLayout> LayoutsOf(const RunSpec& run, Graph& graph, const std::string& mode,
                                const nlohmann::json* strategies) {
  if (!strategies) return SearchStrategies(run, graph, mode, "").layouts;
  if (strategies->size() != graph.operators().size())
    throw std::runtime_error("the document's strategies do not match its run's operators");
  for (size_t i = 0; i < graph.operators().size(); ++i) {
    Operator& op = graph.mutable_op(static_cast<int>(i));
    if (op.type != "Reshape" && op.type != "Flatten") op.strategy = (*strategies)[i].get<Strategy>();  // they follow their input
  }
  return SearchStrategies(run, graph, "semi_auto", "").layouts;
}

std::vector<StrategyRow> StrategyRows(const RunSpec& run, const Graph& graph, const std::vector<OpLayout>& layouts) {
  std::vector<StrategyRow> rows;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    const OpLayout& l = layouts[i];
    const DType dtype = op.outputs.empty() ? DType::kFloat32 : graph.tensor(op.outputs[0]).dtype;
    const double seconds = ComputeSeconds(l.work.forward_flops + l.work.backward_flops,
                                          l.work.forward_bytes + l.work.backward_bytes, dtype, run.cluster, false)
                               .seconds;
    rows.push_back({static_cast<int>(i), QString::fromStdString(op.name), QString::fromStdString(op.type),
                    QString::fromStdString(StrategyToString(l.strategy)),
                    QString::fromStdString(StrategyToString({l.device_matrix})),
                    QString::fromStdString(CommunicationSummary(l)), 1e3 * seconds});
  }
  return rows;
}

// The view of a run with these layouts; its step simulated analytically
// unless given (a given result without events gets the analytical timeline).
RunView Derive(const RunSpec& run, const Graph& graph, const std::vector<OpLayout>& layouts,
               const StepResult* given) {
  RunView view;
  view.run = run;
  const Plan plan = LowerToPlan(run, graph, layouts);
  if (!given) {
    view.result = RunAnalytical(plan, true);
  } else {
    view.result = *given;
    if (view.result.events.empty()) view.result.events = RunAnalytical(plan, true).events;
  }
  view.strategies = StrategyRows(run, graph, layouts);
  view.layouts = BuildRunLayouts(run, graph, layouts);
  view.timeline = BuildTimeline(view.result);
  AttachPassTasks(plan, &view.timeline);
  return view;
}

}  // namespace

RunView SimulateForView(const RunSpec& run) {
  Graph graph = BuildRunGraph(run);
  const std::vector<OpLayout> layouts = LayoutsOf(run, graph, "", nullptr);
  return Derive(run, graph, layouts, nullptr);
}

nlohmann::json SimulateDocument(const RunSpec& run, const std::string& engine) {
  Graph graph = BuildRunGraph(run);
  const std::vector<OpLayout> layouts = LayoutsOf(run, graph, "", nullptr);
  const Plan plan = LowerToPlan(run, graph, layouts);
  const StepResult result = engine == "simgrid"
                                ? sim::RunSimGrid(plan, run.cluster, sim::Fidelity::kAggregated, sim::TraceRequest{true, {}})
                                : RunAnalytical(plan, true);
  nlohmann::json strategies = nlohmann::json::array();
  for (const OpLayout& l : layouts) strategies.push_back(l.strategy);
  return {{"run", ToJson(run)}, {"result", ToJson(result)}, {"strategies", strategies}};
}

RunSpec EditRun(const RunSpec& run, const nlohmann::json& parallel_changes) {
  nlohmann::json doc = ToJson(run);
  nlohmann::json& parallel = doc["parallel"];
  for (const auto& [key, value] : parallel_changes.items()) {
    if (key == "all_reduce_fusion_config") {
      // It replaces comm_fusion.allreduce; an empty list means MindSpore's default.
      if (parallel.contains("comm_fusion")) parallel["comm_fusion"].erase("allreduce");
      if (value.empty()) continue;
    }
    if (key == "parallel_mode" && value != "auto_parallel") parallel.erase("search_mode");
    parallel[key] = value;
  }
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
  Graph graph = BuildRunGraph(run);
  // `shardlab simulate` runs the configured strategies: a result.json without its own list has those.
  const std::vector<OpLayout> layouts =
      LayoutsOf(run, graph, "semi_auto", doc.contains("strategies") ? &doc.at("strategies") : nullptr);
  RunView view = Derive(run, graph, layouts, &result);
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
