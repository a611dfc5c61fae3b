// BiasAdd: the bias follows the channel dimension (dim 1) of the input.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  if (s[1][0] != s[0][1])
    throw LayoutError(fmt::format("the bias is split {} ways but the channel dimension {} ways", s[1][0], s[0][1]));
  const size_t rank = ctx.inputs[0].shape.size();
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(rank);
  out.inputs = {full, {full[1]}};
  out.outputs = {full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), {0});
  axes[1].positions.emplace_back(1, 0);
  return axes;
}

std::vector<int> Weights(const OpContext&) { return {1}; }

}  // namespace

OpFamily BiasAddFamily() { return {"bias_add", &InputShapes, &Infer, &Axes, &Weights}; }

}  // namespace shardlab
