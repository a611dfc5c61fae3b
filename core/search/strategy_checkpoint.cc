#include "core/search/strategy_checkpoint.h"

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/search/strategy_proto.h"
#include "core/util/atomic_file.h"
#include "core/util/input_file.h"
#include "core/util/json_reader.h"

namespace shardlab {
namespace {

bool IsProtobufCheckpoint(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".ckpt" || ext == ".pb";
}

}  // namespace

void SaveStrategyCheckpoint(const std::string& path, const ShardedGraph& sharded) {
  const Graph& graph = sharded.graph;
  const std::vector<OpLayout>& layouts = sharded.layouts;
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

std::map<std::string, LoadedStrategy> LoadStrategyCheckpoint(const std::string& path) {
  if (IsProtobufCheckpoint(path)) {
    const std::string bytes = ReadInputFile(path);
    ProtoStrategyMap map;
    try {
      map = DecodeStrategyMap(bytes);
    } catch (const std::runtime_error& e) {
      throw ConfigError(path, "", std::string("not a MindSpore strategy checkpoint (ParallelStrategyMap): ") + e.what());
    }
    std::map<std::string, LoadedStrategy> strategies;
    for (auto& [name, entry] : map.items)
      strategies[name] = {std::move(entry.second), {path, "/parallel_strategy_item/" + EscapePointerToken(name)}};
    return strategies;
  }
  const nlohmann::json doc = ReadJsonFile(path);
  const JsonNode root(doc, path);
  ObjectReader r(root);
  const JsonNode operators = r.Required("operators");
  r.Optional("parameters");
  r.Finish();
  if (!operators.json().is_object()) operators.Fail("expected an object of operator names");
  std::map<std::string, LoadedStrategy> strategies;
  for (const auto& [name, value] : operators.json().items()) {
    ObjectReader op(operators.Child(name));
    const JsonNode strategy = op.Required("strategy");
    Strategy s;
    for (const JsonNode& tuple : strategy.AsArray()) s.push_back(tuple.AsIntList(1, 1 << 20));
    op.Optional("type");
    op.Optional("device_matrix");
    op.Finish();
    strategies[name] = {s, strategy.location()};
  }
  return strategies;
}

}  // namespace shardlab
