// Transpose: the output map is the input map permuted by `perm`.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const auto perm = ctx.op.IntsAttr("perm");
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(s[0].size());
  TensorMap permuted;
  for (int64_t p : perm) permuted.push_back(full[p]);
  out.inputs = {full};
  out.outputs = {permuted};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) { return PerDimAxes(ctx.inputs[0].shape.size(), {0}); }

}  // namespace

OpFamily TransposeFamily() { return {"transpose", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
