// The interface every operator family implements (one file per family, as
// MindSpore's ops_info/): which shapes a strategy splits, the device matrix
// and tensor maps a strategy gives before repeated calculation is added, the
// communication the family inserts, and the axes strategy enumeration varies.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/comm/collective.h"
#include "core/graph/graph.h"
#include "core/graph/shape_inference.h"
#include "core/layout/tensor_layout.h"

namespace shardlab {

struct OpContext {
  const Operator& op;
  const std::vector<TensorType>& inputs;
  const std::vector<TensorType>& outputs;
};

// Communication an operator inserts in its forward pass, over the ranks that
// differ only along `device_dims` (indices from the left of the device matrix).
struct ForwardComm {
  Collective type;  // AllReduce, ReduceScatter, AllGather
  ReduceOp reduce;  // kNone for AllGather
  std::vector<int> device_dims;
  int output = 0;  // which output it applies to
};

// What a family derives from a strategy, before repeated calculation.
struct BaseLayout {
  Shape device_matrix;
  std::vector<TensorMap> inputs;
  std::vector<TensorMap> outputs;
  std::vector<ForwardComm> forward;
  bool allow_repeat = true;  // false: the strategy must use every device of the stage
  // >= 0: outputs live on the device matrix with dims d and d+1 merged into one
  // (a ReduceScatter leaves rows split over both); their maps refer to it.
  int merged_output_dim = -1;
  // Not empty: outputs live on this regrouping of the device matrix (a
  // Reshape that splits one device dimension into two, or merges two into
  // one, as its tensor dimensions split or merge); their maps refer to it.
  Shape output_matrix;
};

// One axis of strategy enumeration: a factor applied to every (tuple, dim) position.
struct StrategyAxis {
  std::vector<std::pair<int, int>> positions;
};

struct OpFamily {
  std::string name;
  std::vector<Shape> (*strategy_shapes)(const OpContext&);
  BaseLayout (*infer)(const OpContext&, const Strategy&);
  std::vector<StrategyAxis> (*axes)(const OpContext&);
  std::vector<int> (*weight_inputs)(const OpContext&);  // inputs that are usually parameters
};

// The family of an operator type; throws LayoutError for unknown types.
const OpFamily& FamilyOf(const std::string& op_type);

// Helpers the families share.
std::vector<Shape> InputShapes(const OpContext& ctx);
TensorMap FullMap(size_t rank);  // [rank-1, ..., 0]
std::vector<StrategyAxis> PerDimAxes(size_t rank, const std::vector<int>& tuples);
std::vector<int> NoWeights(const OpContext&);

// The families (core/ops/<family>.cc).
OpFamily MatMulFamily();
OpFamily ElementwiseFamily();
OpFamily BiasAddFamily();
OpFamily ActivationFamily();
OpFamily SoftmaxFamily();
OpFamily LayerNormFamily();
OpFamily ReduceFamily();
OpFamily GatherFamily();
OpFamily ReshapeFamily();
OpFamily TransposeFamily();
OpFamily OneHotFamily();
OpFamily LossFamily();
OpFamily ConvFamily();
OpFamily PoolFamily();
OpFamily BatchNormFamily();
OpFamily FlashAttentionFamily();
OpFamily MoeFamily();
OpFamily ConcatFamily();
OpFamily BroadcastFamily();

}  // namespace shardlab
