// SoftmaxCrossEntropyWithLogits (per-sample loss of [batch, classes] logits;
// the class dimension cannot be split) and SigmoidCrossEntropyWithLogits
// (element-wise). Logits and labels share one strategy.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

bool IsSoftmax(const OpContext& ctx) { return ctx.op.type == "SoftmaxCrossEntropyWithLogits"; }

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  if (s[0] != s[1]) throw LayoutError(ctx.op.type + " needs the same strategy for logits and labels");
  if (IsSoftmax(ctx) && s[0].back() != 1) throw LayoutError(ctx.op.type + " cannot split the class dimension");
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(s[0].size());
  out.inputs = {full, full};
  out.outputs = {IsSoftmax(ctx) ? TensorMap{full[0]} : full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), {0, 1});
  if (IsSoftmax(ctx)) axes.pop_back();
  return axes;
}

}  // namespace

OpFamily LossFamily() { return {"loss", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
