#include "core/search/search.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/ops/graph_layouts.h"
#include "core/search/dp_search.h"
#include "core/search/recursive_search.h"
#include "core/search/sharding_propagation.h"
#include "core/search/strategy_proto.h"
#include "core/util/atomic_file.h"
#include "core/util/json_reader.h"

namespace shardlab {
namespace {}  // namespace

SearchResult SearchStrategies(const RunSpec& run, Graph& graph, const std::string& mode,
                              const std::string& cost_model) {
  const auto start = std::chrono::steady_clock::now();
  const ParallelConfig& p = run.parallel;
  SearchResult result;
  result.mode = mode;
  if (result.mode.empty())
    result.mode = p.parallel_mode == ParallelMode::kAutoParallel ? ToString(p.search_mode) : "semi_auto";
  result.cost_model = cost_model.empty() ? p.cost_model.model : cost_model;
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
  options.cost.alpha = p.cost_model.alpha;
  if (p.cost_model.beta > 0) options.cost.beta = p.cost_model.beta;
  options.cost.gamma = p.cost_model.gamma;
  // MindSpore's device_memory_capacity defaults to 16 GiB; the cluster file knows the real one.
  options.cost.device_memory =
      p.cost_model.device_memory_capacity > 0 ? p.cost_model.device_memory_capacity : run.cluster.device.memory_bytes;
  options.cluster = &run.cluster;
  // Exact up to 64 devices per stage; larger stages keep 32 candidates per operator.
  if (options.stage_devices > 64) options.max_candidates = 32;

  if (result.mode == "semi_auto") {
    result.layouts = InferGraphLayouts(graph, options.stage_devices);
  } else if (result.mode == "recursive_programming") {
    result.layouts = RecursiveProgrammingSearch(graph, options);
    CheckSharedParameters(graph, result.layouts);
  } else {
    const StrategyGraph sg(graph, options);
    result.layouts =
        result.mode == "sharding_propagation" ? ShardingPropagation(sg) : sg.Layouts(DynamicProgrammingSearch(sg));
    try {
      CheckSharedParameters(graph, result.layouts);
    } catch (const LayoutError& e) {
      throw LayoutError(
          fmt::format("{}: {}; configure consistent strategies for the operators sharing it", result.mode, e.what()));
    }
    const StrategyGraph chosen(graph, options, result.layouts);
    const std::vector<size_t> only(chosen.nodes().size(), 0);
    result.objective = chosen.TotalCost(only);
    result.memory = chosen.TotalMemory(only);
    if (result.memory > options.cost.device_memory)
      throw LayoutError(
          fmt::format("{}: no strategy fits in memory: the best needs {:.2f} GiB per device against {:.2f} GiB; try "
                      "fully_use_devices false, more pipeline stages or the parallel optimizer",
                      result.mode, result.memory / (1 << 30), options.cost.device_memory / (1 << 30)));
  }
  if (result.mode == "semi_auto" || result.mode == "recursive_programming") {  // evaluated as chosen
    const StrategyGraph fixed(graph, options, result.layouts);
    const std::vector<size_t> only(fixed.nodes().size(), 0);
    result.objective = fixed.TotalCost(only);
    result.memory = fixed.TotalMemory(only);
  }
  result.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

bool IsProtobufCheckpoint(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".ckpt" || ext == ".pb";
}

void SaveStrategyCheckpoint(const std::string& path, const Graph& graph, const std::vector<OpLayout>& layouts) {
  if (IsProtobufCheckpoint(path)) {
    ProtoStrategyMap map;
    for (size_t i = 0; i < layouts.size(); ++i) {
      const Operator& op = graph.op(static_cast<int>(i));
      map.items[op.name] = {static_cast<uint32_t>(op.pipeline_stage), layouts[i].strategy};
    }
    WriteFileAtomically(path, EncodeStrategyMap(map));
    return;
  }
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
  if (IsProtobufCheckpoint(path)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open the strategy checkpoint");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ProtoStrategyMap map;
    try {
      map = DecodeStrategyMap(bytes);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(path + ": not a MindSpore strategy checkpoint (ParallelStrategyMap): " + e.what());
    }
    std::map<std::string, Strategy> strategies;
    for (auto& [name, entry] : map.items) strategies[name] = std::move(entry.second);
    return strategies;
  }
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
