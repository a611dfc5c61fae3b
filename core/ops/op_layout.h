// What one operator under one strategy does on a pipeline stage of D devices:
// its device matrix (with MindSpore's repeated-calculation dimension appended
// on the right when the strategy uses fewer than D devices), the layouts of
// its inputs and outputs, the forward communication it inserts, the gradient
// (mirror) AllReduce of its replicated weights, and its per-device work.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/collective.h"
#include "core/graph/graph.h"
#include "core/graph/shape_inference.h"
#include "core/layout/device_matrix.h"
#include "core/layout/tensor_layout.h"
#include "core/ops/flops.h"

namespace shardlab {

// Communication over the ranks that differ only along `device_dims` (0 = first
// dimension of the operator's device matrix).
struct OpComm {
  Collective type = Collective::kAllReduce;  // AllReduce, ReduceScatter, AllGather
  ReduceOp reduce = ReduceOp::kSum;          // kNone for AllGather
  std::vector<int> device_dims;
  int64_t group_size = 1;
  double bytes = 0;  // payload per device: the collective's input
  int input = -1;    // mirror and backward: the input whose gradient it reduces
};

struct OpLayout {
  std::string op_type;
  int64_t devices = 1;
  Strategy strategy;
  Shape device_matrix;
  int64_t repeat = 1;  // repeated-calculation factor (last device-matrix dimension when > 1)
  std::vector<TensorLayout> inputs;
  std::vector<TensorLayout> outputs;
  std::vector<OpComm> forward_comm;
  std::vector<OpComm> mirror_comm;
  // Gradients of non-weight inputs that are partial sums: the input is whole
  // along device dims the outputs are split on, so its gradient is summed
  // there (the backward AllReduce of a column-parallel MatMul's input).
  std::vector<OpComm> backward_comm;
  OpWork work;  // per device

  // The ranks of `comm`'s group that contains `rank` (ranks 0..devices-1, or `stage_ranks`).
  std::vector<int64_t> GroupOf(const OpComm& comm, int64_t rank, const std::vector<int64_t>& stage_ranks = {}) const;
};

// Checks the strategy (one tuple per input, one entry per dimension, entries
// >= 1, dimensions divisible, powers of two on power-of-two stages, product
// dividing the stage) and the family's own rules; throws LayoutError naming
// the rule. `weights` lists the inputs that are parameters (they get mirrors).
OpLayout InferOpLayout(const Operator& op, const std::vector<TensorType>& inputs,
                       const std::vector<TensorType>& outputs, const Strategy& strategy, int64_t stage_devices,
                       const std::vector<int>& weights);

// The inputs a family treats as weights when no graph says which are parameters.
std::vector<int> DefaultWeights(const Operator& op, const std::vector<TensorType>& inputs,
                                const std::vector<TensorType>& outputs);

// Every valid strategy of the operator on `stage_devices` devices; with
// `fully_use_devices` only those without repeated calculation.
std::vector<Strategy> EnumerateStrategies(const Operator& op, const std::vector<TensorType>& inputs,
                                          const std::vector<TensorType>& outputs, int64_t stage_devices,
                                          bool fully_use_devices);

// MindSpore's default for operators without a strategy in semi_auto_parallel:
// split the first dimension of every non-weight input over the stage (as far
// as it divides), weights whole; all ones when the family rejects that.
Strategy DataParallelStrategy(const Operator& op, const std::vector<TensorType>& inputs,
                              const std::vector<TensorType>& outputs, int64_t stage_devices,
                              const std::vector<int>& weights);

// The shapes and dtypes of a graph's tensors, for the layout functions.
std::vector<TensorType> TensorTypes(const Graph& graph, const std::vector<int>& tensors);
// The inputs of `op` that are parameters (they get mirrors).
std::vector<int> ParameterInputs(const Graph& graph, const Operator& op);

// "((2,1),(1,4))".
std::string StrategyToString(const Strategy& strategy);
// The communication a layout inserts, short: "AllReduce(8) grad AllReduce(4) mirror(32)", "-" for none.
std::string CommunicationSummary(const OpLayout& layout);

// The layout as `shardlab layout` prints it; groups are those of `rank`.
nlohmann::json ToJson(const OpLayout& layout, int64_t rank);

}  // namespace shardlab
