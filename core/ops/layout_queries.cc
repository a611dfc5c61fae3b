#include "core/ops/layout_queries.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/graph/graph_json.h"
#include "core/graph/op_types.h"
#include "core/graph/shape_inference.h"
#include "core/layout/device_matrix.h"
#include "core/layout/redistribution.h"
#include "core/ops/op_layout.h"
#include "core/util/json_reader.h"
#include "core/util/quote.h"
#include "core/util/suggest.h"

namespace shardlab {
namespace {

// A JSON argument, parsed; errors name the option ("--strategy: /1/0: ...").
struct JsonArg {
  JsonArg(const std::string& option, const std::string& text) : name(option), json(ParseJsonText(text, option)) {}
  JsonNode node() const { return JsonNode(json, name); }
  std::string name;
  nlohmann::json json;
};

// The largest stage a query lays out (the CLI's --devices range).
constexpr int64_t kMaxQueryDevices = 4096;

void CheckRange(const char* option, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max)
    throw std::runtime_error(fmt::format("{} {} is not in {}..{}", option, value, min, max));
}

DType ParseDTypeArg(const std::string& name) {
  auto dtype = ParseDType(name);
  if (!dtype) throw std::runtime_error("--dtype: unknown dtype " + Quoted(name) + DidYouMean(name, DTypeNames()));
  return *dtype;
}

TensorLayout ReadLayoutArg(const JsonArg& arg, const Shape& shape) {
  ObjectReader reader(arg.node());
  const Shape dev = reader.Required("device_matrix").AsIntList(1, 4096);
  const TensorMap map = reader.Required("tensor_map").AsIntList(-1, 64);
  Shape own_shape = shape;
  if (auto s = reader.Optional("shape")) own_shape = s->AsIntList(1, int64_t{1} << 40);
  reader.Finish();
  if (own_shape.empty()) arg.node().Fail("no tensor shape: give --shape or a \"shape\" here");
  try {
    return TensorLayout(dev, map, own_shape);
  } catch (const LayoutError& e) {
    arg.node().Fail(e.what());
  }
}

}  // namespace

nlohmann::json AnswerOpLayout(const OpLayoutQuery& args) {
  CheckRange("--devices", args.devices, 1, kMaxQueryDevices);
  CheckRange("--rank", args.rank, 0, kMaxQueryDevices - 1);
  if (!FindOpType(args.op))
    throw std::runtime_error("--op: unknown operator type " + Quoted(args.op) + DidYouMean(args.op, OpTypeNames()));
  Operator op;
  op.name = args.op;
  op.type = args.op;
  if (!args.attrs.empty()) op.attrs = AttrsFromJson(JsonArg("--attrs", args.attrs).node());
  const JsonArg inputs_arg("--inputs", args.inputs);
  const DType dtype = ParseDTypeArg(args.dtype);
  std::vector<TensorType> inputs;
  const auto shapes = inputs_arg.node().AsArray();
  for (size_t i = 0; i < shapes.size(); ++i) {
    // Indices of Gather and OneHot are integers; everything else has --dtype.
    const bool indices = (args.op == "Gather" && i == 1) || args.op == "OneHot";
    inputs.push_back({shapes[i].AsIntList(1, int64_t{1} << 40), indices ? DType::kInt32 : dtype});
  }
  std::vector<TensorType> outputs;
  try {
    outputs = InferOutputs(op, inputs);
  } catch (const GraphError& e) {
    throw std::runtime_error(std::string("--inputs: ") + e.what());
  }
  Strategy strategy;
  const JsonArg strategy_arg("--strategy", args.strategy);
  for (const auto& tuple : strategy_arg.node().AsArray()) strategy.push_back(tuple.AsIntList(INT64_MIN, INT64_MAX));
  std::vector<int> weights;
  if (args.weights.empty()) {
    weights = DefaultWeights(op, inputs, outputs);
  } else {
    const JsonArg weights_arg("--weights", args.weights);
    for (int64_t w : weights_arg.node().AsIntList(0, static_cast<int64_t>(inputs.size()) - 1))
      weights.push_back(static_cast<int>(w));
  }
  if (args.rank >= args.devices)
    throw std::runtime_error(fmt::format("--rank {} is not below --devices {}", args.rank, args.devices));
  const OpLayout layout = InferOpLayout(op, inputs, outputs, strategy, args.devices, weights);
  return ToJson(layout, args.rank);
}

nlohmann::json AnswerRedistribution(const RedistributionQuery& args) {
  CheckRange("--rank", args.rank, 0, kMaxQueryDevices - 1);
  Shape shape;
  if (!args.shape.empty()) shape = JsonArg("--shape", args.shape).node().AsIntList(1, int64_t{1} << 40);
  const TensorLayout from = ReadLayoutArg(JsonArg("--from", args.from), shape);
  const TensorLayout to = ReadLayoutArg(JsonArg("--to", args.to), shape);
  const Redistribution r = PlanRedistribution(from, to, args.enable_alltoall, DTypeBytes(ParseDTypeArg(args.dtype)));
  if (args.rank >= from.device_count())
    throw std::runtime_error(fmt::format("--rank {} is not below the {} devices", args.rank, from.device_count()));
  nlohmann::json j = ToJson(r);
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (r.ops[i].device_dim >= 0)
      j["ops"][i]["ranks"] = DeviceMatrix(r.ops[i].arrangement).GroupAlongDim(args.rank, r.ops[i].device_dim);
  j["rank"] = args.rank;
  return j;
}

nlohmann::json AnswerDeviceGroups(const DeviceGroupsQuery& args) {
  CheckRange("--rank", args.rank, 0, kMaxQueryDevices - 1);
  const JsonArg matrix_arg("--matrix", args.matrix);
  const Shape dims = matrix_arg.node().AsIntList(1, 4096);
  if (dims.empty()) matrix_arg.node().Fail("expected at least one dimension, such as [8] or [2,4]");
  if (const std::string problem = DeviceMatrixProblem(dims); !problem.empty()) matrix_arg.node().Fail(problem);
  const DeviceMatrix matrix(dims);
  if (args.rank >= matrix.size())
    throw std::runtime_error(
        fmt::format("--rank {} is not below the {} devices of {}", args.rank, matrix.size(), args.matrix));
  nlohmann::json groups = nlohmann::json::array();
  // MindSpore's DeviceMatrix::CreateGroupList: the rank's group along every dimension, in dimension order.
  nlohmann::json rank_groups = nlohmann::json::array();
  for (size_t d = 0; d < dims.size(); ++d) {
    const std::vector<int64_t> ranks = matrix.GroupAlongDim(args.rank, static_cast<int>(d));
    groups.push_back({{"dim", d},
                      {"tensor_map_value", MapValueFromDim(static_cast<int>(d), dims.size())},
                      {"size", dims[d]},
                      {"ranks", ranks}});
    rank_groups.push_back(ranks);
  }
  nlohmann::json j = {{"device_matrix", dims}, {"devices", matrix.size()},
                      {"rank", args.rank},     {"coordinates", matrix.Coordinates(args.rank)},
                      {"groups", groups},      {"rank_groups", rank_groups}};
  if (!args.tensor_map.empty()) {
    const JsonArg arg("--tensor-map", args.tensor_map);
    const TensorMap map = arg.node().AsIntList(-1, static_cast<int64_t>(dims.size()) - 1);
    for (size_t i = 0; i < map.size(); ++i)
      if (map[i] >= 0 && std::count(map.begin(), map.end(), map[i]) > 1)
        arg.node().Element(i).Fail(fmt::format("device dimension {} is named twice", map[i]));
    j["tensor_map"] = map;
    j["same_slice"] = matrix.GroupByTensorMap(args.rank, map);
  }
  return j;
}

}  // namespace shardlab
