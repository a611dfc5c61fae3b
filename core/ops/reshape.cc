// Reshape and Flatten: the strategy splits the input. A split of input
// dimension i carries over to the output dimension j that ends where i ends
// (equal products of the dimensions from there to the innermost), when j's
// size is a multiple of the split and no other split input dimension lies
// inside j. A split that cannot carry over is gathered: an AllGather along it.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

// Product of shape[i..] for every i (the flat period of dimension i).
std::vector<int64_t> Periods(const Shape& shape) {
  std::vector<int64_t> periods(shape.size());
  int64_t p = 1;
  for (size_t i = shape.size(); i-- > 0;) periods[i] = p *= shape[i];
  return periods;
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape& target = ctx.outputs[0].shape;
  const auto in_period = Periods(in), out_period = Periods(target);
  auto inner = [](const Shape& shape, const std::vector<int64_t>& period, size_t i) { return period[i] / shape[i]; };
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(in.size());
  out.inputs = {full};
  TensorMap out_map(target.size(), kNotSplit);
  std::vector<int> gathered;
  for (size_t i = 0; i < in.size(); ++i) {
    if (s[0][i] == 1) continue;
    bool carried = false;
    for (size_t j = 0; j < target.size() && !carried; ++j) {
      if (out_period[j] != in_period[i] || target[j] % s[0][i] != 0) continue;
      bool crowded = false;  // another split input dimension inside output dimension j
      for (size_t k = 0; k < in.size(); ++k)
        if (k != i && s[0][k] > 1 && inner(in, in_period, k) >= inner(target, out_period, j) &&
            in_period[k] <= out_period[j])
          crowded = true;
      if (crowded) continue;
      out_map[j] = full[i];
      carried = true;
    }
    if (!carried) gathered.push_back(static_cast<int>(i));
  }
  out.outputs = {out_map};
  if (!gathered.empty()) out.forward.push_back({Collective::kAllGather, ReduceOp::kNone, gathered, 0});
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) { return PerDimAxes(ctx.inputs[0].shape.size(), {0}); }

}  // namespace

OpFamily ReshapeFamily() { return {"reshape", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
