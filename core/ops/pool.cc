// MaxPool and AvgPool over NCHW: batch and channels can be split, the
// spatial window cannot.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  if (s[0][2] != 1 || s[0][3] != 1) throw LayoutError(ctx.op.type + " cannot split the spatial dimensions");
  BaseLayout out;
  out.device_matrix = s[0];
  out.inputs = {FullMap(4)};
  out.outputs = {FullMap(4)};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext&) { return {{{{0, 0}}}, {{{0, 1}}}}; }

}  // namespace

OpFamily PoolFamily() { return {"pool", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
