// LayerNorm(x, gamma, beta) and RmsNorm(x, gamma): the normalised dimensions
// (from begin_norm_axis; RmsNorm normalises the last) cannot be split; gamma
// and beta follow x on their dimensions.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

int64_t BeginNormAxis(const OpContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.size());
  return NormalizeAxis(ctx.op.IntAttr("begin_norm_axis", -1), rank).value_or(rank - 1);
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const size_t rank = ctx.inputs[0].shape.size();
  for (size_t i = BeginNormAxis(ctx); i < rank; ++i)
    if (s[0][i] != 1) throw LayoutError(fmt::format("{} cannot split the normalised dimension {}", ctx.op.type, i));
  const size_t params = ctx.inputs[1].shape.size();
  for (size_t p = 1; p < ctx.inputs.size(); ++p)
    for (size_t j = 0; j < params; ++j)
      if (s[p][j] != s[0][rank - params + j])
        throw LayoutError(ctx.op.type + "'s gamma and beta must be split like the dimensions of x they scale");
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(rank);
  const TensorMap param_map(full.end() - static_cast<long>(params), full.end());
  out.inputs.assign(ctx.inputs.size(), param_map);
  out.inputs[0] = full;
  out.outputs = {full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), {0});
  axes.resize(BeginNormAxis(ctx));
  return axes;
}

std::vector<int> Weights(const OpContext& ctx) {
  std::vector<int> weights;
  for (size_t p = 1; p < ctx.inputs.size(); ++p) weights.push_back(static_cast<int>(p));
  return weights;
}

}  // namespace

OpFamily LayerNormFamily() { return {"layer_norm", &InputShapes, &Infer, &Axes, &Weights}; }

}  // namespace shardlab
