#include "core/layout/redistribution.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace shardlab {
namespace {

constexpr double kAllToAllScale = 2.0;   // MindSpore ALLTOALL_SCALE_FACTOR
constexpr double kAllGatherScale = 0.5;  // MindSpore ALLGATHER_REDUCESCATTER_SCALE_FACTOR

double Elements(const Shape& s) {
  double p = 1;
  for (int64_t d : s) p *= static_cast<double>(d);
  return p;
}

int64_t Product(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

// Brings both layouts to one device arrangement and one tensor shape by
// alternating refinements until they agree. Returns false when the factors
// do not nest.
bool Unify(TensorLayout& from, TensorLayout& to) {
  for (int round = 0; round < 64; ++round) {
    const auto arrangement = CommonRefinement(from.device_arrangement(), to.device_arrangement());
    if (!arrangement) return false;
    auto f = from.ExpandDeviceArrangement(*arrangement);
    auto t = to.ExpandDeviceArrangement(*arrangement);
    if (!f || !t) return false;
    from = *f;
    to = *t;
    if (from.tensor_shape() == to.tensor_shape()) return true;
    const auto shape = CommonRefinement(from.tensor_shape(), to.tensor_shape());
    if (!shape) return false;
    bool refined_devices = false;
    for (TensorLayout* layout : {&from, &to}) {
      const auto expansion = layout->ExpandTensorShape(*shape);
      if (expansion.layout) {
        *layout = *expansion.layout;
      } else if (expansion.needed_arrangement) {
        // Refine the devices of this layout; the next round carries it to the other one.
        *layout = *layout->ExpandDeviceArrangement(*expansion.needed_arrangement);
        refined_devices = true;
        break;
      } else {
        return false;
      }
    }
    if (!refined_devices && from.tensor_shape() == to.tensor_shape()) return true;
  }
  return false;
}

bool Uses(const TensorMap& map, int64_t value) { return std::find(map.begin(), map.end(), value) != map.end(); }

// MindSpore's operator inference on unified layouts: split passes and permute
// passes until stable, then one concat pass; a forced concat breaks cycles.
std::vector<RedistPrimitive> InferPrimitives(const TensorLayout& from, const TensorLayout& to) {
  TensorMap current = from.tensor_map();
  const TensorMap& target = to.tensor_map();
  const Shape& dev = from.device_arrangement();
  auto size_of = [&](int64_t value) { return dev[DimFromMapValue(value, dev.size())]; };
  std::vector<RedistPrimitive> out;
  for (int guard = 0; current != target; ++guard) {
    if (guard > 4 * static_cast<int>(current.size()) + 8) throw LayoutError("redistribution did not converge");
    const size_t before = out.size();
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t i = 0; i < current.size(); ++i) {
        if (current[i] == kNotSplit && target[i] != kNotSplit && !Uses(current, target[i])) {
          out.push_back(
              {RedistPrimitive::Kind::kSplitByAxis, static_cast<int64_t>(i), -1, target[i], size_of(target[i])});
          current[i] = target[i];
          changed = true;
        }
      }
      bool permuted = true;
      while (permuted) {
        permuted = false;
        for (size_t i = 0; i < current.size(); ++i) {
          if (current[i] != kNotSplit || target[i] == kNotSplit) continue;
          const auto holder = std::find(current.begin(), current.end(), target[i]);
          if (holder == current.end()) continue;
          const int64_t concat_dim = holder - current.begin();
          out.push_back({RedistPrimitive::Kind::kPermuteByAxis, static_cast<int64_t>(i), concat_dim, target[i],
                         size_of(target[i])});
          current[i] = target[i];
          current[concat_dim] = kNotSplit;
          permuted = changed = true;
        }
      }
    }
    for (size_t i = 0; i < current.size(); ++i) {
      if (current[i] != kNotSplit && current[i] != target[i] && !Uses(target, current[i])) {
        out.push_back(
            {RedistPrimitive::Kind::kConcatByAxis, static_cast<int64_t>(i), -1, current[i], size_of(current[i])});
        current[i] = kNotSplit;
      }
    }
    if (out.size() == before && current != target) {
      for (size_t i = 0; i < current.size(); ++i) {
        if (current[i] != kNotSplit && current[i] != target[i]) {
          out.push_back(
              {RedistPrimitive::Kind::kConcatByAxis, static_cast<int64_t>(i), -1, current[i], size_of(current[i])});
          current[i] = kNotSplit;
          break;
        }
      }
    }
  }
  return out;
}

// Lowers primitives to operators, tracking the local slice shape as they apply.
class Lowering {
 public:
  Lowering(Shape arrangement, Shape slice, bool enable_alltoall)
      : arrangement_(std::move(arrangement)), slice_(std::move(slice)), alltoall_(enable_alltoall) {}

  void Apply(const RedistPrimitive& p) {
    const int dim = DimFromMapValue(p.map_value, arrangement_.size());
    switch (p.kind) {
      case RedistPrimitive::Kind::kSplitByAxis:
        StridedSlice(p.tensor_dim, dim, p.device_count);
        break;
      case RedistPrimitive::Kind::kConcatByAxis:
        Gather(p.tensor_dim, dim, p.device_count);
        break;
      case RedistPrimitive::Kind::kPermuteByAxis:
        if (alltoall_) {
          AlltoAll(p.tensor_dim, p.concat_dim, dim, p.device_count);
        } else {
          Gather(p.concat_dim, dim, p.device_count);
          StridedSlice(p.tensor_dim, dim, p.device_count);
        }
        break;
    }
  }

  void Reshape(const Shape& target) {
    RedistOp op = Base(RedistOp::Kind::kReshape);
    op.output_shape = target;
    slice_ = target;
    ops_.push_back(op);
  }

  void set_arrangement(Shape arrangement) { arrangement_ = std::move(arrangement); }
  const Shape& slice() const { return slice_; }
  std::vector<RedistOp>& ops() { return ops_; }

 private:
  RedistOp Base(RedistOp::Kind kind) const {
    RedistOp op;
    op.kind = kind;
    op.input_shape = slice_;
    op.arrangement = arrangement_;
    return op;
  }

  void StridedSlice(int64_t axis, int dim, int64_t count) {
    RedistOp op = Base(RedistOp::Kind::kStridedSlice);
    op.axis = axis;
    op.count = count;
    op.device_dim = dim;
    slice_[axis] /= count;
    op.output_shape = slice_;
    ops_.push_back(op);
  }

  void Gather(int64_t axis, int dim, int64_t count) {
    RedistOp gather = Base(RedistOp::Kind::kAllGather);
    gather.count = count;
    gather.device_dim = dim;
    gather.received_elements = static_cast<double>(count - 1) * Elements(slice_);
    Shape stacked = slice_;
    stacked[0] *= count;  // AllGather concatenates along axis 0
    gather.output_shape = stacked;
    ops_.push_back(gather);
    slice_[axis] *= count;
    if (axis != 0) {
      RedistOp split = Base(RedistOp::Kind::kSplit);
      split.input_shape = stacked;
      split.axis = 0;
      split.count = count;
      Shape part = stacked;
      part[0] /= count;
      split.output_shape = part;
      ops_.push_back(split);
      RedistOp concat = Base(RedistOp::Kind::kConcat);
      concat.input_shape = part;
      concat.axis = axis;
      concat.count = count;
      concat.output_shape = slice_;
      ops_.push_back(concat);
    }
  }

  void AlltoAll(int64_t split_dim, int64_t concat_dim, int dim, int64_t count) {
    RedistOp op = Base(RedistOp::Kind::kAlltoAll);
    op.split_dim = split_dim;
    op.concat_dim = concat_dim;
    op.count = count;
    op.device_dim = dim;
    op.received_elements = Elements(slice_) * static_cast<double>(count - 1) / static_cast<double>(count);
    slice_[split_dim] /= count;
    slice_[concat_dim] *= count;
    op.output_shape = slice_;
    ops_.push_back(op);
  }

  Shape arrangement_;
  Shape slice_;
  bool alltoall_;
  std::vector<RedistOp> ops_;
};

// MindSpore's cost terms for the primitives, on the unified from-slice.
RedistCost CostOf(const std::vector<RedistPrimitive>& primitives, const Shape& unified_slice, bool reshaped,
                  const Shape& squeezed_from_slice, int64_t dtype_bytes) {
  RedistCost c;
  const double p = Elements(unified_slice);
  for (const auto& prim : primitives) {
    const double n = static_cast<double>(prim.device_count);
    switch (prim.kind) {
      case RedistPrimitive::Kind::kPermuteByAxis:
        c.forward_communication += kAllToAllScale * p;
        c.backward_communication += kAllToAllScale * p;
        c.communication += 2 * kAllToAllScale * p;
        c.computation += prim.concat_dim == 0 ? p : p + 2 * p * n;
        c.memory += prim.concat_dim == 0 ? p : 2 * p * n + p;
        break;
      case RedistPrimitive::Kind::kConcatByAxis:
        c.forward_communication += kAllGatherScale * p * n;
        c.backward_communication += kAllGatherScale * p;
        c.communication += kAllGatherScale * p * (n + 1);
        c.computation += prim.tensor_dim == 0 ? p : p + 2 * p * n;
        c.memory += prim.tensor_dim == 0 ? p * n : 2 * p * n + p;
        break;
      case RedistPrimitive::Kind::kSplitByAxis:
        c.computation += p;
        c.memory += p;
        break;
    }
  }
  if (reshaped) {
    const double q = Elements(squeezed_from_slice);
    c.computation += 2 * q;
    c.memory += 2 * q;
  }
  const double bytes = static_cast<double>(dtype_bytes);
  c.forward_communication *= bytes;
  c.backward_communication *= bytes;
  c.communication *= bytes;
  c.computation *= bytes;
  c.memory *= bytes;
  return c;
}

// The plan when the layouts do not nest: gather every split dimension of
// `from`, reshape the (now whole) tensor, slice it as `to` wants.
void PlanThroughReplication(Redistribution& r, bool enable_alltoall) {
  const TensorLayout from = r.from.Normalized();
  const TensorLayout to = r.to.Normalized();
  Lowering lowering(from.device_arrangement(), from.SliceShape(), enable_alltoall);
  for (size_t i = 0; i < from.tensor_map().size(); ++i) {
    if (from.tensor_map()[i] == kNotSplit) continue;
    const RedistPrimitive p{RedistPrimitive::Kind::kConcatByAxis, static_cast<int64_t>(i), -1, from.tensor_map()[i],
                            from.device_arrangement()[from.SplitDim(i)]};
    r.primitives.push_back(p);
    lowering.Apply(p);
  }
  if (lowering.slice() != to.tensor_shape()) lowering.Reshape(to.tensor_shape());
  lowering.set_arrangement(to.device_arrangement());
  for (size_t i = 0; i < to.tensor_map().size(); ++i) {
    if (to.tensor_map()[i] == kNotSplit) continue;
    const RedistPrimitive p{RedistPrimitive::Kind::kSplitByAxis, static_cast<int64_t>(i), -1, to.tensor_map()[i],
                            to.device_arrangement()[to.SplitDim(i)]};
    r.primitives.push_back(p);
    lowering.Apply(p);
  }
  r.ops = std::move(lowering.ops());
  r.unified_from = from;
  r.unified_to = to;
}

}  // namespace

const char* ToString(RedistOp::Kind kind) {
  switch (kind) {
    case RedistOp::Kind::kStridedSlice:
      return "StridedSlice";
    case RedistOp::Kind::kAllGather:
      return "AllGather";
    case RedistOp::Kind::kSplit:
      return "Split";
    case RedistOp::Kind::kConcat:
      return "Concat";
    case RedistOp::Kind::kAlltoAll:
      return "AlltoAll";
    case RedistOp::Kind::kReshape:
      return "Reshape";
  }
  return "";
}

Collective RedistOp::collective() const {
  return kind == Kind::kAlltoAll ? Collective::kAllToAll : Collective::kAllGather;
}

const char* ToString(RedistPrimitive::Kind kind) {
  switch (kind) {
    case RedistPrimitive::Kind::kSplitByAxis:
      return "SplitByAxis";
    case RedistPrimitive::Kind::kPermuteByAxis:
      return "PermuteByAxis";
    case RedistPrimitive::Kind::kConcatByAxis:
      return "ConcatByAxis";
  }
  return "";
}

Redistribution PlanRedistribution(const TensorLayout& from, const TensorLayout& to, bool enable_alltoall,
                                  int64_t dtype_bytes) {
  if (from.device_count() != to.device_count())
    throw LayoutError(fmt::format("layouts over {} and {} devices cannot be redistributed into each other",
                                  from.device_count(), to.device_count()));
  if (Product(from.tensor_shape()) != Product(to.tensor_shape()))
    throw LayoutError(fmt::format("shapes {} and {} have different element counts ({} and {})", from.tensor_shape(),
                                  to.tensor_shape(), Product(from.tensor_shape()), Product(to.tensor_shape())));
  Redistribution r;
  r.from = from;
  r.to = to;
  TensorLayout unified_from = from.Normalized().Squeezed();
  TensorLayout unified_to = to.Normalized().Squeezed();
  const Shape squeezed_from_slice = unified_from.SliceShape();
  if (!Unify(unified_from, unified_to)) {
    r.through_replication = true;
    PlanThroughReplication(r, enable_alltoall);
  } else {
    r.unified_from = unified_from;
    r.unified_to = unified_to;
    r.primitives = InferPrimitives(unified_from, unified_to);
    const Shape from_slice = from.SliceShape(), to_slice = to.SliceShape();
    Lowering lowering(unified_from.device_arrangement(), from_slice, enable_alltoall);
    if (r.primitives.empty()) {
      if (from_slice != to_slice) lowering.Reshape(to_slice);
    } else {
      if (from_slice != unified_from.SliceShape()) lowering.Reshape(unified_from.SliceShape());
      for (const auto& p : r.primitives) lowering.Apply(p);
      if (lowering.slice() != to_slice) lowering.Reshape(to_slice);
    }
    r.ops = std::move(lowering.ops());
  }
  for (const auto& op : r.ops) r.comm_bytes_per_device += op.received_elements * static_cast<double>(dtype_bytes);
  const bool reshaped =
      std::any_of(r.ops.begin(), r.ops.end(), [](const RedistOp& op) { return op.kind == RedistOp::Kind::kReshape; });
  r.cost = CostOf(r.primitives, r.unified_from.SliceShape(), reshaped, squeezed_from_slice, dtype_bytes);
  return r;
}

nlohmann::json ToJson(const Redistribution& r) {
  nlohmann::json primitives = nlohmann::json::array();
  for (const auto& p : r.primitives) {
    nlohmann::json j = {{"type", ToString(p.kind)},
                        {"tensor_dim", p.tensor_dim},
                        {"device_dim", p.map_value},
                        {"device_count", p.device_count}};
    if (p.kind == RedistPrimitive::Kind::kPermuteByAxis) j["concat_dim"] = p.concat_dim;
    primitives.push_back(j);
  }
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : r.ops) {
    nlohmann::json j = {{"type", ToString(op.kind)}, {"input_shape", op.input_shape}, {"output_shape", op.output_shape}};
    using Kind = RedistOp::Kind;
    if (op.kind == Kind::kStridedSlice || op.kind == Kind::kSplit || op.kind == Kind::kConcat) j["axis"] = op.axis;
    if (op.kind == Kind::kStridedSlice || op.kind == Kind::kSplit) j["slices"] = op.count;
    if (op.kind == Kind::kAlltoAll) {
      j["split_dim"] = op.split_dim;
      j["concat_dim"] = op.concat_dim;
      j["split_count"] = op.count;
    }
    if (op.device_dim >= 0) {
      j["group_device_dim"] = op.device_dim;
      j["device_matrix"] = op.arrangement;
    }
    if (op.is_communication()) {
      j["group_size"] = op.count;
      j["received_elements_per_device"] = op.received_elements;
    }
    ops.push_back(j);
  }
  const auto layout = [](const TensorLayout& l) {
    return nlohmann::json{
        {"device_matrix", l.device_arrangement()}, {"tensor_map", l.tensor_map()}, {"shape", l.tensor_shape()}};
  };
  return {{"unified",
           {{"device_matrix", r.unified_from.device_arrangement()},
            {"from_map", r.unified_from.tensor_map()},
            {"to_map", r.unified_to.tensor_map()},
            {"shape", r.unified_from.tensor_shape()},
            {"to_shape", r.unified_to.tensor_shape()}}},
          {"from", layout(r.from)},
          {"to", layout(r.to)},
          {"through_replication", r.through_replication},
          {"primitives", primitives},
          {"ops", ops},
          {"comm_bytes_per_device", r.comm_bytes_per_device},
          {"cost",
           {{"forward_communication", r.cost.forward_communication},
            {"backward_communication", r.cost.backward_communication},
            {"communication", r.cost.communication},
            {"computation", r.cost.computation},
            {"memory", r.cost.memory}}}};
}

}  // namespace shardlab
