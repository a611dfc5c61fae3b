// Element-wise binary operators (Add, Sub, Mul, RealDiv, Maximum, Minimum)
// with numpy broadcasting: the shorter input is padded with leading 1s; on
// every dimension both strategies agree unless one input broadcasts there.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const Shape &a = ctx.inputs[0].shape, &b = ctx.inputs[1].shape;
  const size_t n = std::max(a.size(), b.size());
  auto padded = [n](const Shape& shape, const std::vector<int64_t>& strategy, size_t i, bool want_shape) {
    const size_t offset = n - shape.size();
    if (i < offset) return int64_t{1};
    return want_shape ? shape[i - offset] : strategy[i - offset];
  };
  BaseLayout out;
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = padded(a, s[0], i, false), sb = padded(b, s[1], i, false);
    const int64_t da = padded(a, s[0], i, true), db = padded(b, s[1], i, true);
    if (sa != sb && !((da == 1 && sa == 1) || (db == 1 && sb == 1)))
      throw LayoutError(fmt::format("the inputs are split differently on dimension {}: {} and {}", i, sa, sb));
    out.device_matrix.push_back(std::max(sa, sb));
  }
  const TensorMap full = FullMap(n);
  for (int input = 0; input < 2; ++input) {
    const Shape& shape = input == 0 ? a : b;
    TensorMap map;
    for (size_t i = n - shape.size(); i < n; ++i)
      map.push_back(s[input][i - (n - shape.size())] == out.device_matrix[i] ? full[i] : kNotSplit);
    out.inputs.push_back(map);
  }
  out.outputs = {full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  const Shape &a = ctx.inputs[0].shape, &b = ctx.inputs[1].shape;
  const size_t n = std::max(a.size(), b.size());
  std::vector<StrategyAxis> axes(n);
  for (size_t i = 0; i < n; ++i) {
    const int ia = static_cast<int>(i) - static_cast<int>(n - a.size());
    const int ib = static_cast<int>(i) - static_cast<int>(n - b.size());
    if (ia >= 0 && a[ia] > 1) axes[i].positions.emplace_back(0, ia);
    if (ib >= 0 && b[ib] > 1) axes[i].positions.emplace_back(1, ib);
  }
  return axes;
}

}  // namespace

OpFamily ElementwiseFamily() { return {"elementwise", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
