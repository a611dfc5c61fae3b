#include "core/config/model_config.h"

#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config/hf_model_config.h"
#include "core/graph/graph_json.h"
#include "core/util/json_reader.h"
#include "core/util/suggest.h"

namespace shardlab {
namespace {

ParamValue ReadParam(const ParamSpec& spec, const JsonNode& node) {
  if (std::holds_alternative<int64_t>(spec.fallback)) return node.AsInt(spec.min, spec.max);
  if (std::holds_alternative<bool>(spec.fallback)) return node.AsBool();
  if (std::holds_alternative<double>(spec.fallback))
    return node.AsNumber(static_cast<double>(spec.min), static_cast<double>(spec.max));
  if (std::holds_alternative<std::vector<int64_t>>(spec.fallback)) {
    std::vector<int64_t> values;
    for (const JsonNode& item : node.AsArray()) values.push_back(item.AsInt(spec.min, spec.max));
    return values;
  }
  return spec.choices.empty() ? node.AsString() : node.AsEnum(spec.choices);
}

void ReadParams(const ModelBuilder& builder, BuilderParams& params, const JsonNode& node) {
  ObjectReader reader(node);
  for (const auto& spec : builder.params)
    if (auto value = reader.Optional(spec.name)) params.Set(spec.name, ReadParam(spec, *value));
  reader.Finish();
}

}  // namespace

ModelSpec ReadModelSpec(const JsonNode& node) {
  if (IsHfModelConfig(node)) return ReadHfModelSpec(node);
  ObjectReader reader(node);
  ModelSpec model;
  model.name = reader.Required("name").AsString();
  const auto builder = reader.Optional("builder");
  const auto params = reader.Optional("params");
  const auto graph = reader.Optional("graph");
  reader.Finish();
  if (builder.has_value() == graph.has_value())
    node.Fail("a model names either a \"builder\" (with \"params\") or an explicit \"graph\", exactly one of them");
  if (graph) {
    if (params) params->Fail("\"params\" belongs to builder models; this model has an explicit graph");
    model.graph = GraphFromJson(*graph);
    return model;
  }
  std::vector<std::string> names;
  for (const auto& b : ModelBuilders()) names.push_back(b.name);
  model.builder = builder->AsEnum(names);
  const ModelBuilder* found = FindModelBuilder(model.builder);
  model.params = found->Defaults();
  if (params) ReadParams(*found, model.params, *params);
  return model;
}

void ApplyModelParams(ModelSpec& model, const JsonNode& node) {
  if (model.builder.empty()) node.Fail("model_params needs a builder model; this model has an explicit graph");
  ReadParams(*FindModelBuilder(model.builder), model.params, node);
}

Graph BuildModelGraph(const ModelSpec& model, const BuildOptions& options, const JsonNode& where) {
  if (model.graph) return *model.graph;
  Graph graph;
  try {
    graph = FindModelBuilder(model.builder)->build(model.name, model.params, options);
  } catch (const GraphError& e) {
    where.Fail(fmt::format("cannot build model \"{}\" ({}): {}", model.name, model.builder, e.what()));
  }
  // The builder derives its strategies from the parameters given here.
  for (size_t i = 0; i < graph.operators().size(); ++i) {
    Operator& op = graph.mutable_op(static_cast<int>(i));
    if (op.strategy) op.strategy_source = where.location();
  }
  return graph;
}

DType ComputeDType(const ModelSpec& model) {
  if (model.graph) {
    // An explicit graph says it in its tensors: the floating type that most
    // matrix-product output elements have (the work peak FLOP/s is about),
    // else most parameter elements.
    std::map<DType, int64_t> products, parameters;
    const Graph& g = *model.graph;
    for (const Operator& op : g.operators())
      if (op.type == "MatMul" || op.type == "BatchMatMul" || op.type == "Conv2D")
        for (int t : op.outputs) products[g.tensor(t).dtype] += g.tensor(t).elements();
    for (int t : g.Parameters()) parameters[g.tensor(t).dtype] += g.tensor(t).elements();
    for (const auto* counts : {&products, &parameters}) {
      std::optional<DType> best;
      for (const auto& [dtype, elements] : *counts) {
        const bool floating = dtype == DType::kFloat16 || dtype == DType::kBFloat16 || dtype == DType::kFloat32 ||
                              dtype == DType::kFloat64;
        if (floating && (!best || elements > counts->at(*best))) best = dtype;
      }
      if (best) return *best;
    }
    return DType::kFloat32;
  }
  if (!model.params.values().count("dtype")) return DType::kFloat32;
  return *ParseDType(model.params.String("dtype"));
}

nlohmann::json ToJson(const ModelSpec& model) {
  nlohmann::json j = {{"name", model.name}};
  if (model.graph) {
    j["graph"] = GraphToJson(*model.graph);
    return j;
  }
  j["builder"] = model.builder;
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, value] : model.params.values())
    params[key] = std::visit([](const auto& v) { return nlohmann::json(v); }, value);
  j["params"] = params;
  return j;
}

int64_t SequenceChunks(const ModelSpec& model) {
  return model.params.values().count("seq_split_num") ? model.params.Int("seq_split_num") : 1;
}

}  // namespace shardlab
