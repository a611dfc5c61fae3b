#include "core/search/search.h"

#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/ops/graph_layouts.h"
#include "core/search/dp_search.h"
#include "core/search/recursive_search.h"
#include "core/search/sharding_propagation.h"
#include "core/util/atomic_file.h"
#include "core/util/json_reader.h"

namespace shardlab {
namespace {

// The candidate of each node whose strategy matches `layouts` (semi-auto and recursive results).
std::vector<size_t> ChoiceOf(const StrategyGraph& sg, const std::vector<OpLayout>& layouts) {
  std::vector<size_t> choice(sg.nodes().size(), 0);
  for (size_t n = 0; n < sg.nodes().size(); ++n) {
    const auto& candidates = sg.nodes()[n].candidates;
    for (size_t c = 0; c < candidates.size(); ++c)
      if (candidates[c].strategy == layouts[sg.nodes()[n].op].strategy) choice[n] = c;
  }
  return choice;
}

}  // namespace

SearchResult SearchStrategies(const RunSpec& run, Graph& graph, const std::string& mode,
                              const std::string& cost_model) {
  const auto start = std::chrono::steady_clock::now();
  const ParallelConfig& p = run.parallel;
  SearchResult result;
  result.mode = mode;
  if (result.mode.empty())
    result.mode = p.parallel_mode == ParallelMode::kAutoParallel ? ToString(p.search_mode) : "semi_auto";
  result.cost_model = cost_model.empty() ? "mindspore" : cost_model;
  if (!p.strategy_ckpt_load_file.empty()) {
    const auto loaded = LoadStrategyCheckpoint(p.strategy_ckpt_load_file);
    for (size_t i = 0; i < graph.operators().size(); ++i) {
      Operator& op = graph.mutable_op(static_cast<int>(i));
      if (op.type == "Reshape" || op.type == "Flatten") continue;  // they follow their input
      if (auto it = loaded.find(op.name); it != loaded.end()) op.strategy = it->second;
    }
  }
  for (const Operator& op : graph.operators()) result.configured += op.strategy.has_value();

  SearchOptions options;
  options.stage_devices = p.devices_per_stage();
  options.fully_use_devices = p.fully_use_devices;
  options.enable_alltoall = p.enable_alltoall;
  options.cost = DefaultCostModel(run.cluster);
  options.cost.model = result.cost_model;
  options.cost.training = run.simulation.mode == "train";
  // MindSpore's device_memory_capacity defaults to 16 GiB; the cluster file knows the real one.
  options.cost.device_memory = run.cluster.device.memory_bytes;
  options.cluster = &run.cluster;

  if (result.mode == "semi_auto") {
    result.layouts = InferGraphLayouts(graph, options.stage_devices);
  } else if (result.mode == "recursive_programming") {
    result.layouts = RecursiveProgrammingSearch(graph, options);
    CheckSharedParameters(graph, result.layouts);
  } else {
    const StrategyGraph sg(graph, options);
    const std::vector<size_t> choice =
        result.mode == "sharding_propagation" ? ShardingPropagation(sg) : DynamicProgrammingSearch(sg);
    result.layouts = sg.Layouts(choice);
    try {
      CheckSharedParameters(graph, result.layouts);
    } catch (const LayoutError& e) {
      throw LayoutError(
          fmt::format("{}: {}; configure consistent strategies for the operators sharing it", result.mode, e.what()));
    }
    result.objective = sg.TotalCost(choice);
    result.memory = sg.TotalMemory(choice);
    if (result.memory > options.cost.device_memory)
      throw LayoutError(
          fmt::format("{}: no strategy fits in memory: the best needs {:.2f} GiB per device against {:.2f} GiB; try "
                      "fully_use_devices false, more pipeline stages or the parallel optimizer",
                      result.mode, result.memory / (1 << 30), options.cost.device_memory / (1 << 30)));
  }
  if (result.objective == 0 && result.mode != "dynamic_programming" && result.mode != "sharding_propagation") {
    const StrategyGraph sg(graph, options);
    const auto choice = ChoiceOf(sg, result.layouts);
    result.objective = sg.TotalCost(choice);
    result.memory = sg.TotalMemory(choice);
  }
  result.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

void SaveStrategyCheckpoint(const std::string& path, const Graph& graph, const std::vector<OpLayout>& layouts) {
  nlohmann::json operators = nlohmann::json::object(), parameters = nlohmann::json::object();
  for (size_t i = 0; i < layouts.size(); ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    operators[op.name] = {
        {"type", op.type}, {"strategy", layouts[i].strategy}, {"device_matrix", layouts[i].device_matrix}};
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const Tensor& t = graph.tensor(op.inputs[k]);
      if (!t.is_parameter() || parameters.contains(t.name)) continue;
      const TensorLayout& l = layouts[i].inputs[k];
      parameters[t.name] = {
          {"device_matrix", l.device_arrangement()}, {"tensor_map", l.tensor_map()}, {"slice_shape", l.SliceShape()}};
    }
  }
  WriteFileAtomically(path, nlohmann::json{{"operators", operators}, {"parameters", parameters}}.dump(2) + "\n");
}

std::map<std::string, Strategy> LoadStrategyCheckpoint(const std::string& path) {
  const nlohmann::json doc = ReadJsonFile(path);
  const JsonNode root(doc, path);
  ObjectReader r(root);
  const JsonNode operators = r.Required("operators");
  r.Optional("parameters");
  r.Finish();
  if (!operators.json().is_object()) operators.Fail("expected an object of operator names");
  std::map<std::string, Strategy> strategies;
  for (const auto& [name, value] : operators.json().items()) {
    ObjectReader op(operators.Child(name));
    Strategy s;
    for (const JsonNode& tuple : op.Required("strategy").AsArray()) s.push_back(tuple.AsIntList(1, 1 << 20));
    op.Optional("type");
    op.Optional("device_matrix");
    op.Finish();
    strategies[name] = s;
  }
  return strategies;
}

}  // namespace shardlab
