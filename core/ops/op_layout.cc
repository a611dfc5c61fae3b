#include "core/ops/op_layout.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

void CheckStrategy(const Operator& op, const std::vector<Shape>& shapes, const Strategy& s, int64_t devices) {
  if (s.size() != shapes.size())
    throw LayoutError(
        fmt::format("{}: strategy size {} is not equal to inputs size {}", op.type, s.size(), shapes.size()));
  for (size_t t = 0; t < s.size(); ++t) {
    if (s[t].size() != shapes[t].size())
      throw LayoutError(fmt::format("{}: strategy {} of input {} has {} entries but the input has {} dimensions",
                                    op.type, s[t], t, s[t].size(), shapes[t].size()));
    for (size_t d = 0; d < s[t].size(); ++d) {
      const int64_t v = s[t][d];
      if (v < 1) throw LayoutError(fmt::format("{}: strategy {} of input {} has an entry < 1", op.type, s[t], t));
      if (IsPowerOfTwo(devices) && !IsPowerOfTwo(v))
        throw LayoutError(
            fmt::format("{}: strategy value {} is not a power of two (the stage has {} devices)", op.type, v, devices));
      if (shapes[t][d] % v != 0)
        throw LayoutError(
            fmt::format("{}: shape {} of input {} cannot be divisible by strategy value {} on dimension {}", op.type,
                        shapes[t], t, v, d));
    }
  }
}

std::vector<int> DimsNotNamed(const TensorMap& map, size_t rank) {
  std::vector<int> dims;
  for (size_t d = 0; d < rank; ++d)
    if (std::find(map.begin(), map.end(), MapValueFromDim(static_cast<int>(d), rank)) == map.end())
      dims.push_back(static_cast<int>(d));
  return dims;
}

double SliceBytes(const TensorLayout& layout, DType dtype) {
  return static_cast<double>(Product(layout.SliceShape()) * DTypeBytes(dtype));
}

}  // namespace

std::vector<int64_t> OpLayout::GroupOf(const OpComm& comm, int64_t rank,
                                       const std::vector<int64_t>& stage_ranks) const {
  return DeviceMatrix(device_matrix, stage_ranks).GroupAlongDims(rank, comm.device_dims);
}

OpLayout InferOpLayout(const Operator& op, const std::vector<TensorType>& inputs,
                       const std::vector<TensorType>& outputs, const Strategy& strategy, int64_t stage_devices,
                       const std::vector<int>& weights) {
  const OpFamily& family = FamilyOf(op.type);
  const OpContext ctx{op, inputs, outputs};
  CheckStrategy(op, family.strategy_shapes(ctx), strategy, stage_devices);
  BaseLayout base = family.infer(ctx, strategy);

  OpLayout out;
  out.op_type = op.type;
  out.devices = stage_devices;
  out.strategy = strategy;
  const int64_t used = Product(base.device_matrix);
  if (stage_devices % used != 0)
    throw LayoutError(
        fmt::format("{}: it requires {} devices, but the device number of this stage is {}, it can not "
                    "be divisible by {}",
                    op.type, used, stage_devices, used));
  out.repeat = stage_devices / used;
  if (out.repeat > 1 && !base.allow_repeat)
    throw LayoutError(fmt::format("{}: this strategy uses {} of the stage's {} devices; it must use all of them",
                                  op.type, used, stage_devices));
  out.device_matrix = base.device_matrix;
  if (out.repeat > 1) {
    // Current MindSpore appends the repeat on the right: every named dimension shifts by one.
    out.device_matrix.push_back(out.repeat);
    for (auto* maps : {&base.inputs, &base.outputs})
      for (auto& map : *maps)
        for (auto& v : map)
          if (v != kNotSplit) ++v;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    out.inputs.emplace_back(out.device_matrix, base.inputs[i], inputs[i].shape);
  Shape output_matrix = out.device_matrix;
  if (!base.output_matrix.empty()) {
    output_matrix = base.output_matrix;
    if (out.repeat > 1) output_matrix.push_back(out.repeat);
  }
  if (base.merged_output_dim >= 0) {
    const int d = base.merged_output_dim;
    output_matrix[d] *= output_matrix[d + 1];
    output_matrix.erase(output_matrix.begin() + d + 1);
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    out.outputs.emplace_back(output_matrix, base.outputs[i], outputs[i].shape);

  for (const auto& f : base.forward) {
    OpComm comm{f.type, f.reduce, f.device_dims};
    for (int d : f.device_dims) comm.group_size *= out.device_matrix[d];
    // The payload is the collective's input: a ReduceScatter starts from the whole partial result.
    comm.bytes = SliceBytes(out.outputs[f.output], outputs[f.output].dtype) *
                 static_cast<double>(f.type == Collective::kReduceScatter ? comm.group_size : 1);
    out.forward_comm.push_back(comm);
  }
  for (int w : weights) {
    const auto dims = DimsNotNamed(out.inputs[w].tensor_map(), out.device_matrix.size());
    OpComm mirror{Collective::kAllReduce, ReduceOp::kSum, dims};
    for (int d : dims) mirror.group_size *= out.device_matrix[d];
    if (mirror.group_size == 1) continue;
    mirror.bytes = SliceBytes(out.inputs[w], inputs[w].dtype);
    mirror.input = w;
    out.mirror_comm.push_back(mirror);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (std::find(weights.begin(), weights.end(), static_cast<int>(i)) != weights.end()) continue;
    const TensorMap& in_map = out.inputs[i].tensor_map();
    std::vector<int> partial;
    for (size_t d = 0; d < out.device_matrix.size(); ++d) {
      const int64_t value = MapValueFromDim(static_cast<int>(d), out.device_matrix.size());
      if (out.device_matrix[d] == 1 || std::find(in_map.begin(), in_map.end(), value) != in_map.end()) continue;
      bool named_by_output = false;
      for (const auto& o : out.outputs)
        if (o.device_arrangement() == out.device_matrix)
          named_by_output = named_by_output || std::count(o.tensor_map().begin(), o.tensor_map().end(), value) > 0;
      if (named_by_output) partial.push_back(static_cast<int>(d));
    }
    if (partial.empty()) continue;
    OpComm comm{Collective::kAllReduce, ReduceOp::kSum, partial};
    for (int d : partial) comm.group_size *= out.device_matrix[d];
    comm.bytes = SliceBytes(out.inputs[i], inputs[i].dtype);
    comm.input = static_cast<int>(i);
    out.backward_comm.push_back(comm);
  }
  std::vector<TensorType> in_slices, out_slices;
  for (size_t i = 0; i < inputs.size(); ++i) in_slices.push_back({out.inputs[i].SliceShape(), inputs[i].dtype});
  for (size_t i = 0; i < outputs.size(); ++i) out_slices.push_back({out.outputs[i].SliceShape(), outputs[i].dtype});
  // A forward ReduceScatter's operator computes the whole partial product
  // before the scatter leaves each device its rows.
  if (base.merged_output_dim >= 0) out_slices[0].shape[0] *= out.device_matrix[base.merged_output_dim + 1];
  out.work = ComputeOpWork(op, in_slices, out_slices);
  return out;
}

std::vector<int> DefaultWeights(const Operator& op, const std::vector<TensorType>& inputs,
                                const std::vector<TensorType>& outputs) {
  return FamilyOf(op.type).weight_inputs(OpContext{op, inputs, outputs});
}

std::vector<Strategy> EnumerateStrategies(const Operator& op, const std::vector<TensorType>& inputs,
                                          const std::vector<TensorType>& outputs, int64_t stage_devices,
                                          bool fully_use_devices) {
  const OpFamily& family = FamilyOf(op.type);
  const OpContext ctx{op, inputs, outputs};
  const std::vector<Shape> shapes = family.strategy_shapes(ctx);
  const std::vector<StrategyAxis> axes = family.axes(ctx);
  const bool power_of_two = IsPowerOfTwo(stage_devices);
  std::vector<int64_t> factors;  // candidate split counts
  for (int64_t f = 1; f <= stage_devices; ++f)
    if (stage_devices % f == 0 && (!power_of_two || IsPowerOfTwo(f))) factors.push_back(f);

  Strategy current;
  for (const auto& shape : shapes) current.emplace_back(shape.size(), 1);
  std::vector<Strategy> out;
  const std::vector<int> weights = DefaultWeights(op, inputs, outputs);
  std::function<void(size_t, int64_t)> assign = [&](size_t axis, int64_t used) {
    if (axis == axes.size()) {
      if (fully_use_devices && used != stage_devices) return;
      try {
        const OpLayout layout = InferOpLayout(op, inputs, outputs, current, stage_devices, weights);
        if (!fully_use_devices || layout.repeat == 1) out.push_back(current);
      } catch (const LayoutError&) {
      }
      return;
    }
    for (int64_t f : factors) {
      if ((stage_devices / used) % f != 0) continue;
      bool fits = true;
      for (auto [t, d] : axes[axis].positions) fits = fits && shapes[t][d] % f == 0;
      if (!fits) continue;
      if (axes[axis].positions.empty() && f > 1) break;
      for (auto [t, d] : axes[axis].positions) current[t][d] = f;
      assign(axis + 1, used * f);
      for (auto [t, d] : axes[axis].positions) current[t][d] = 1;
    }
  };
  assign(0, 1);
  return out;
}

Strategy DataParallelStrategy(const Operator& op, const std::vector<TensorType>& inputs,
                              const std::vector<TensorType>& outputs, int64_t stage_devices,
                              const std::vector<int>& weights) {
  const OpFamily& family = FamilyOf(op.type);
  const std::vector<Shape> shapes = family.strategy_shapes(OpContext{op, inputs, outputs});
  Strategy ones, batch;
  for (size_t t = 0; t < shapes.size(); ++t) {
    ones.emplace_back(shapes[t].size(), 1);
    batch.emplace_back(shapes[t].size(), 1);
    const bool is_weight =
        std::find(weights.begin(), weights.end(), static_cast<int>(t)) != weights.end() && op.type != "OneHot";
    if (is_weight || shapes[t].empty()) continue;
    batch[t][0] = std::gcd(shapes[t][0], stage_devices);
  }
  try {
    InferOpLayout(op, inputs, outputs, batch, stage_devices, weights);
    return batch;
  } catch (const LayoutError&) {
    return ones;
  }
}

nlohmann::json ToJson(const OpLayout& layout, int64_t rank) {
  const auto tensors = [](const std::vector<TensorLayout>& ls) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& l : ls)
      out.push_back({{"shape", l.tensor_shape()}, {"tensor_map", l.tensor_map()}, {"slice_shape", l.SliceShape()}});
    return out;
  };
  // One entry per collective; mirror and backward ones also name the input whose gradient they reduce.
  const auto comms = [&](const std::vector<OpComm>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : list) {
      nlohmann::json j = {{"type", OperatorName(c.type)},
                          {"group_size", c.group_size},
                          {"ranks", layout.GroupOf(c, rank)},
                          {"device_dims", c.device_dims},
                          {"bytes", c.bytes}};
      if (c.reduce != ReduceOp::kNone) j["reduce"] = ToString(c.reduce);
      if (c.input >= 0) j["input"] = c.input;
      out.push_back(j);
    }
    return out;
  };
  return {{"op", layout.op_type},
          {"devices", layout.devices},
          {"strategy", layout.strategy},
          {"device_matrix", layout.device_matrix},
          {"repeated_calculation", layout.repeat},
          {"inputs", tensors(layout.inputs)},
          {"outputs", tensors(layout.outputs)},
          {"forward_comm", comms(layout.forward_comm)},
          {"mirror_comm", comms(layout.mirror_comm)},
          {"backward_comm", comms(layout.backward_comm)},
          {"flops", {{"forward", layout.work.forward_flops}, {"backward", layout.work.backward_flops}}},
          {"bytes", {{"forward", layout.work.forward_bytes}, {"backward", layout.work.backward_bytes}}}};
}

std::vector<TensorType> TensorTypes(const Graph& graph, const std::vector<int>& tensors) {
  std::vector<TensorType> types;
  for (int t : tensors) types.push_back({graph.tensor(t).shape, graph.tensor(t).dtype});
  return types;
}

std::vector<int> ParameterInputs(const Graph& graph, const Operator& op) {
  std::vector<int> weights;
  for (size_t k = 0; k < op.inputs.size(); ++k)
    if (graph.tensor(op.inputs[k]).is_parameter()) weights.push_back(static_cast<int>(k));
  return weights;
}

std::string StrategyToString(const Strategy& strategy) {
  std::vector<std::string> tuples;
  for (const auto& t : strategy) tuples.push_back(fmt::format("({})", fmt::join(t, ",")));
  return fmt::format("({})", fmt::join(tuples, ","));
}

std::string CommunicationSummary(const OpLayout& layout) {
  std::vector<std::string> parts;
  for (const OpComm& c : layout.forward_comm)
    parts.push_back(fmt::format("{}({})", OperatorName(c.type), c.group_size));
  for (const OpComm& c : layout.backward_comm)
    parts.push_back(fmt::format("grad {}({})", OperatorName(c.type), c.group_size));
  for (const OpComm& c : layout.mirror_comm) parts.push_back(fmt::format("mirror({})", c.group_size));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, " "));
}

}  // namespace shardlab
