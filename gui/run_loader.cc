#include "gui/run_loader.h"

#include "core/analytical/analytical_engine.h"
#include "core/cost/compute_cost.h"
#include "core/plan/lowering.h"
#include "core/search/search.h"
#include "core/util/json_reader.h"

namespace shardlab::gui {
namespace {

std::vector<OpLayout> LayoutsOf(const RunSpec& run, Graph& graph) {
  const bool searched = run.parallel.parallel_mode == ParallelMode::kAutoParallel;
  const std::string mode = searched ? ToString(run.parallel.search_mode) : "semi_auto";
  return SearchStrategies(run, graph, mode, run.parallel.cost_model.model).layouts;
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

// Everything but the step result, which the caller supplies.
RunView Derive(const RunSpec& run, const StepResult* given) {
  RunView view;
  view.run = run;
  Graph graph = BuildRunGraph(run);
  const std::vector<OpLayout> layouts = LayoutsOf(run, graph);
  const Plan plan = LowerToPlan(run, graph, layouts);
  view.result = given && !given->events.empty() ? *given : RunAnalytical(plan, true);
  if (given && given->events.empty()) {
    // A result without a timeline: the figures are the file's, the timeline the analytical engine's.
    const std::vector<TimelineEvent> events = std::move(view.result.events);
    view.result = *given;
    view.result.events = events;
  }
  view.strategies = StrategyRows(run, graph, layouts);
  view.layouts = BuildRunLayouts(run, graph, layouts);
  view.timeline = BuildTimeline(view.result);
  AttachPassTasks(plan, graph, &view.timeline);
  return view;
}

}  // namespace

RunView SimulateForView(const RunSpec& run) { return Derive(run, nullptr); }

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

nlohmann::json ResultDocument(const RunView& view) {
  return {{"run", ToJson(view.run)}, {"result", ToJson(view.result)}};
}

RunView ViewFromResultDocument(const nlohmann::json& doc, const std::string& source) {
  const RunSpec run = ReadRunSpec(JsonNode(doc.at("run"), source));
  StepResult result;
  try {
    result = StepResultFromJson(doc.at("result"));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(source + ": /result: not a shardlab step result (" + e.what() + ")");
  }
  RunView view = Derive(run, &result);
  view.source = source;
  view.from_result = true;
  return view;
}

RunView LoadForView(const std::string& path) {
  const nlohmann::json doc = ReadJsonFile(path);
  if (doc.is_object() && doc.contains("result") && doc.contains("run")) return ViewFromResultDocument(doc, path);
  RunView view = SimulateForView(LoadRunFile(path));
  view.source = path;
  return view;
}

}  // namespace shardlab::gui
