// OneHot: as in MindSpore, the strategy is given against the output
// (indices dimensions, then depth); the indices follow the leading entries.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

std::vector<Shape> StrategyShapes(const OpContext& ctx) { return {ctx.outputs[0].shape}; }

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(s[0].size());
  out.inputs = {TensorMap(full.begin(), full.end() - 1)};
  out.outputs = {full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) { return PerDimAxes(ctx.outputs[0].shape.size(), {0}); }

}  // namespace

OpFamily OneHotFamily() { return {"one_hot", &StrategyShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
