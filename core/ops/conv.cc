// Conv2D on NCHW input and OIHW weight: the batch, input-channel and
// output-channel dimensions can be split (device matrix [n, c_in, c_out]);
// a split input channel sums partial outputs with an AllReduce. Spatial
// dimensions stay whole.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  for (int d : {2, 3})
    if (s[0][d] != 1 || s[1][d] != 1) throw LayoutError("Conv2D cannot split the spatial dimensions");
  if (s[0][1] != s[1][1])
    throw LayoutError(
        fmt::format("the input channels are split {} ways in the input but {} in the weight", s[0][1], s[1][1]));
  BaseLayout out;
  out.device_matrix = {s[0][0], s[0][1], s[1][0]};
  out.inputs = {{2, 1, kNotSplit, kNotSplit}, {0, 1, kNotSplit, kNotSplit}};
  out.outputs = {{2, 0, kNotSplit, kNotSplit}};
  if (s[0][1] > 1) out.forward.push_back({Collective::kAllReduce, ReduceOp::kSum, {1}, 0});
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext&) { return {{{{0, 0}}}, {{{0, 1}, {1, 1}}}, {{{1, 0}}}}; }

std::vector<int> Weights(const OpContext&) { return {1}; }

}  // namespace

OpFamily ConvFamily() { return {"conv", &InputShapes, &Infer, &Axes, &Weights}; }

}  // namespace shardlab
