// Softmax and LogSoftmax: like an activation, but the dimensions they
// normalise over (attribute `axis`) cannot be split. RotaryPositionEmbedding
// shares the rule: the halves of its last dimension rotate together, so that
// dimension (the default axis, -1) cannot be split either; SplitV cannot
// split the dimension it cuts (split_dim) and maps every part like its input.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

std::vector<int64_t> Axis(const OpContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.size());
  if (ctx.op.type == "SplitV") return {*NormalizeAxis(ctx.op.IntAttr("split_dim", 0), rank)};
  return NormalizedAxes(ctx.op, rank, {-1});
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  for (int64_t a : Axis(ctx))
    if (s[0][a] != 1) throw LayoutError(fmt::format("{} cannot split its axis dimension {}", ctx.op.type, a));
  BaseLayout out;
  out.device_matrix = s[0];
  out.inputs = {FullMap(s[0].size())};
  out.outputs.assign(ctx.outputs.size(), FullMap(s[0].size()));
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), {0});
  for (int64_t a : Axis(ctx)) axes[a].positions.clear();
  return axes;
}

}  // namespace

OpFamily SoftmaxFamily() { return {"softmax", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
