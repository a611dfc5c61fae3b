// Tensor redistribution: the communication that turns one layout of a tensor
// into another, as MindSpore derives it. Both layouts are squeezed and
// normalised, brought to a common device arrangement and tensor shape, the
// primitive sequence (SplitByAxis, PermuteByAxis, ConcatByAxis) is inferred
// with MindSpore's pass order, and lowered to the operators MindSpore inserts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/collective.h"
#include "core/layout/tensor_layout.h"

namespace shardlab {

struct RedistPrimitive {
  enum class Kind { kSplitByAxis, kPermuteByAxis, kConcatByAxis };
  Kind kind;
  int64_t tensor_dim;       // split dim (Split, Permute) or gathered dim (Concat)
  int64_t concat_dim = -1;  // Permute: the dim that gives up its split
  int64_t map_value;        // device dim, counted from the right as in tensor maps
  int64_t device_count;     // size of that device dim
};

const char* ToString(RedistPrimitive::Kind kind);

// An operator inserted into the graph. Collective groups are the ranks along
// `device_dim` (0 = first) of `arrangement`.
struct RedistOp {
  enum class Kind {
    kStridedSlice,  // keep this device's part of one axis (no communication)
    kAllGather,     // gather the group's slices, stacked along axis 0
    kSplit,         // split the stacked result along axis 0 ...
    kConcat,        // ... and concatenate the parts along the gathered axis
    kAlltoAll,      // split one axis over the group, concatenate another
    kReshape,       // change the slice's shape (no data moves)
  };
  Kind kind = Kind::kReshape;
  Shape input_shape;  // the local slice the op receives
  Shape output_shape;
  int64_t axis = -1;             // StridedSlice, Split, Concat
  int64_t count = 1;             // slices (StridedSlice, Split), group size (AllGather, AlltoAll)
  int64_t split_dim = -1;        // AlltoAll
  int64_t concat_dim = -1;       // AlltoAll
  int device_dim = -1;           // StridedSlice, AllGather, AlltoAll
  Shape arrangement;             // device arrangement the device_dim refers to
  double received_elements = 0;  // per device

  bool is_communication() const { return kind == Kind::kAllGather || kind == Kind::kAlltoAll; }
  // The collective a communicating op is (AllGather or AllToAll).
  Collective collective() const;
};

// MindSpore's operator name: "StridedSlice", "AllGather", ...
const char* ToString(RedistOp::Kind kind);

// MindSpore's redistribution cost terms (TensorRedistribution::ComputeCost),
// in bytes per device.
struct RedistCost {
  double forward_communication = 0;
  double backward_communication = 0;
  double communication = 0;
  double computation = 0;
  double memory = 0;
};

struct Redistribution {
  TensorLayout from;  // as given
  TensorLayout to;
  TensorLayout unified_from;  // common device arrangement and tensor shape
  TensorLayout unified_to;
  // The layouts' factors do not nest (e.g. devices [2,3] vs [3,2]): the plan
  // gathers the whole tensor and slices it again, which is always correct.
  bool through_replication = false;
  std::vector<RedistPrimitive> primitives;
  std::vector<RedistOp> ops;
  double comm_bytes_per_device = 0;  // bytes each device receives
  RedistCost cost;

  bool empty() const { return ops.empty(); }
};

// Throws LayoutError when the layouts do not describe the same tensor on the
// same number of devices.
Redistribution PlanRedistribution(const TensorLayout& from, const TensorLayout& to, bool enable_alltoall,
                                  int64_t dtype_bytes);

nlohmann::json ToJson(const Redistribution& r);

}  // namespace shardlab
