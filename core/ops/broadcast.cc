// BroadcastTo: the input's dimensions of size 1 repeat to the target shape.
// Those dimensions cannot be split; the others split like the input and the
// output's repeated dimensions are whole on every device.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape& out_shape = ctx.outputs[0].shape;
  BaseLayout out;
  out.device_matrix = s[0];
  TensorMap map = FullMap(in.size());
  out.inputs = {map};
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != out_shape[d]) {
      if (s[0][d] != 1) throw LayoutError(fmt::format("BroadcastTo cannot split the repeated dimension {}", d));
      map[d] = kNotSplit;
    }
  out.outputs = {map};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), {0});
  for (size_t d = 0; d < axes.size(); ++d)
    if (ctx.inputs[0].shape[d] != ctx.outputs[0].shape[d]) axes[d].positions.clear();
  return axes;
}

}  // namespace

OpFamily BroadcastFamily() { return {"broadcast", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
