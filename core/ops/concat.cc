// Concat: every input split alike, the dimension it joins along (attribute
// `axis`) whole, since each device's slices must hold whole inputs to join.
// The output maps like the inputs.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

int64_t Axis(const OpContext& ctx) {
  return *NormalizeAxis(ctx.op.IntAttr("axis", 0), static_cast<int64_t>(ctx.inputs[0].shape.size()));
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const int64_t axis = Axis(ctx);
  if (s[0][axis] != 1) throw LayoutError(fmt::format("Concat cannot split its axis dimension {}", axis));
  for (size_t i = 1; i < s.size(); ++i)
    if (s[i] != s[0]) throw LayoutError(fmt::format("Concat must split input {} like input 0", i));
  BaseLayout out;
  out.device_matrix = s[0];
  out.inputs.assign(s.size(), FullMap(s[0].size()));
  out.outputs = {FullMap(s[0].size())};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  std::vector<int> tuples;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) tuples.push_back(static_cast<int>(i));
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), tuples);
  axes[Axis(ctx)].positions.clear();
  return axes;
}

}  // namespace

OpFamily ConcatFamily() { return {"concat", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
