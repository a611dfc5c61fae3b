#include "core/graph/graph_json.h"

#include "core/util/suggest.h"

namespace shardlab {
namespace {

nlohmann::json AttrToJson(const AttrValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

AttrValue AttrFromJson(const JsonNode& node) {
  const auto& j = node.json();
  if (j.is_boolean()) return j.get<bool>();
  if (j.is_number_integer()) return node.AsInt(INT64_MIN, INT64_MAX);
  if (j.is_number_float()) return j.get<double>();
  if (j.is_string()) return j.get<std::string>();
  if (j.is_array()) return node.AsIntList(INT64_MIN, INT64_MAX);
  node.Fail("expected a bool, number, string or list of integers, got " + node.Describe());
}

Shape ReadShape(const JsonNode& node) { return node.AsIntList(1, int64_t{1} << 40); }

DType ReadDType(ObjectReader& reader) {
  const auto node = reader.Required("dtype");
  return *ParseDType(node.AsEnum(DTypeNames()));
}

void ReadTensor(Graph& graph, const JsonNode& node) {
  ObjectReader reader(node);
  const std::string name = reader.Required("name").AsString();
  const std::string kind = reader.Required("kind").AsEnum({"input", "parameter"});
  const Shape shape = ReadShape(reader.Required("shape"));
  const DType dtype = ReadDType(reader);
  const bool requires_grad = reader.Bool("requires_grad", kind == "parameter");
  const bool layerwise_parallel = reader.Bool("layerwise_parallel", false);
  const int64_t comm_fusion = reader.Int("comm_fusion", 1, 0, INT32_MAX);
  const bool parallel_optimizer = reader.Bool("parallel_optimizer", true);
  reader.Finish();
  try {
    const int index = kind == "input" ? graph.AddInput(name, shape, dtype) : graph.AddParameter(name, shape, dtype);
    Tensor& t = graph.mutable_tensor(index);
    t.requires_grad = requires_grad;
    t.layerwise_parallel = layerwise_parallel;
    t.comm_fusion = comm_fusion;
    t.parallel_optimizer = parallel_optimizer;
  } catch (const GraphError& e) {
    node.Fail(e.what());
  }
}

void ReadOperator(Graph& graph, const JsonNode& node) {
  ObjectReader reader(node);
  Operator op;
  op.name = reader.Required("name").AsString();
  op.type = reader.Required("type").AsString();
  const auto inputs = reader.Required("inputs");
  for (const auto& input : inputs.AsArray()) {
    const std::string name = input.AsString();
    auto index = graph.FindTensor(name);
    if (!index) {
      std::vector<std::string> known;
      for (const auto& t : graph.tensors()) known.push_back(t.name);
      input.Fail("no tensor named \"" + name + "\" exists before this operator" + DidYouMean(name, known));
    }
    op.inputs.push_back(*index);
  }
  std::vector<std::string> output_names;
  if (auto outputs = reader.Optional("outputs"))
    for (const auto& output : outputs->AsArray()) output_names.push_back(output.AsString());
  if (auto attrs = reader.Optional("attrs")) op.attrs = AttrsFromJson(*attrs);
  if (auto shard = reader.Optional("shard")) {
    Strategy strategy;
    for (const auto& tuple : shard->AsArray()) strategy.push_back(tuple.AsIntList(1, 4096));
    op.strategy = std::move(strategy);
    op.strategy_source = shard->location();
  }
  op.recompute = reader.Bool("recompute", false);
  op.offload_activations = reader.Bool("offload_activations", false);
  op.pipeline_stage = reader.Int("pipeline_stage", 0, 0, 4095);
  reader.Finish();
  try {
    graph.AddOperator(std::move(op), std::move(output_names));
  } catch (const GraphError& e) {
    node.Fail(e.what());
  }
}

}  // namespace

Attrs AttrsFromJson(const JsonNode& node) {
  ObjectReader reader(node);
  Attrs attrs;
  for (const auto& [key, value] : node.json().items()) attrs[key] = AttrFromJson(reader.Required(key));
  reader.Finish();
  return attrs;
}

nlohmann::json GraphToJson(const Graph& graph) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& t : graph.tensors()) {
    if (t.kind == TensorKind::kActivation) continue;
    nlohmann::json j = {{"name", t.name}, {"kind", ToString(t.kind)}, {"shape", t.shape}, {"dtype", ToString(t.dtype)}};
    if (t.is_parameter()) {
      if (!t.requires_grad) j["requires_grad"] = false;
      if (t.layerwise_parallel) j["layerwise_parallel"] = true;
      if (t.comm_fusion != 1) j["comm_fusion"] = t.comm_fusion;
      if (!t.parallel_optimizer) j["parallel_optimizer"] = false;
    }
    tensors.push_back(std::move(j));
  }
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : graph.operators()) {
    nlohmann::json j = {{"name", op.name}, {"type", op.type}};
    nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
    for (int t : op.inputs) inputs.push_back(graph.tensor(t).name);
    for (int t : op.outputs) outputs.push_back(graph.tensor(t).name);
    j["inputs"] = std::move(inputs);
    j["outputs"] = std::move(outputs);
    if (!op.attrs.empty()) {
      nlohmann::json attrs = nlohmann::json::object();
      for (const auto& [key, value] : op.attrs) attrs[key] = AttrToJson(value);
      j["attrs"] = std::move(attrs);
    }
    if (op.strategy) j["shard"] = *op.strategy;
    if (op.recompute) j["recompute"] = true;
    if (op.offload_activations) j["offload_activations"] = true;
    if (op.pipeline_stage != 0) j["pipeline_stage"] = op.pipeline_stage;
    ops.push_back(std::move(j));
  }
  return {{"name", graph.name()}, {"tensors", std::move(tensors)}, {"operators", std::move(ops)}};
}

Graph GraphFromJson(const JsonNode& node) {
  ObjectReader reader(node);
  Graph graph(reader.Required("name").AsString());
  const auto tensors = reader.Required("tensors");
  const auto operators = reader.Required("operators");
  reader.Finish();
  for (const auto& tensor : tensors.AsArray()) ReadTensor(graph, tensor);
  const auto op_nodes = operators.AsArray();
  if (op_nodes.empty()) operators.Fail("a graph needs at least one operator");
  for (const auto& op : op_nodes) ReadOperator(graph, op);
  return graph;
}

}  // namespace shardlab
