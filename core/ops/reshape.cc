// Reshape and Flatten: the strategy splits the input. A split of input
// dimension i carries over to the output dimension j that ends where i ends
// (equal products of the dimensions from there to the innermost), when j's
// size is a multiple of the split and no other split input dimension lies
// inside j. Two more cases keep every device's slice in place, as tokens
// split over data and context parallel need ([batch*seq, hidden] <->
// [batch, seq, heads, head_dim] with one row of sequences per data-parallel slice):
// - a split larger than j's size, a multiple of it, splits j whole and the
//   output dimension after j (which must lie inside i) by the rest: the
//   device dimension becomes two;
// - input dimensions i and i+1 both split, i into single elements, that
//   merge (with unsplit dimensions after them) into one output dimension:
//   their device dimensions become one.
// A split that cannot carry over is gathered: an AllGather along it.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

// Product of shape[i..] for every i (the flat period of dimension i).
std::vector<int64_t> Periods(const Shape& shape) {
  std::vector<int64_t> periods(shape.size());
  int64_t p = 1;
  for (size_t i = shape.size(); i-- > 0;) periods[i] = p *= shape[i];
  return periods;
}

// Product of the dimensions inside dimension i (its inner period).
int64_t Inner(const Shape& shape, const std::vector<int64_t>& period, size_t i) { return period[i] / shape[i]; }

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const Shape& in = ctx.inputs[0].shape;
  const Shape& target = ctx.outputs[0].shape;
  const auto in_period = Periods(in), out_period = Periods(target);
  const size_t n = in.size();
  BaseLayout out;
  out.device_matrix = s[0];
  out.inputs = {FullMap(n)};
  // The output's device dimensions: each input dimension's split in one
  // part, or two (a split), and a part merged into the one before it.
  std::vector<Shape> parts(n);
  std::vector<char> merged_into_previous(n, 0);
  for (size_t i = 0; i < n; ++i) parts[i] = {s[0][i]};
  // The output dimensions named: (input dimension, part), or none.
  std::vector<std::pair<int, int>> named(target.size(), {-1, -1});
  std::vector<int> gathered;
  for (size_t i = 0; i < n; ++i) {
    const int64_t split = s[0][i];
    if (split == 1 || merged_into_previous[i]) continue;
    auto find_output = [&](auto&& fits) {
      for (size_t j = 0; j < target.size(); ++j)
        if (out_period[j] == in_period[i] && fits(j)) return static_cast<int>(j);
      return -1;
    };
    const int carried = find_output([&](size_t j) {
      if (target[j] % split != 0) return false;
      for (size_t k = 0; k < n; ++k)  // another split input dimension inside output dimension j
        if (k != i && s[0][k] > 1 && Inner(in, in_period, k) >= Inner(target, out_period, j) &&
            in_period[k] <= out_period[j])
          return false;
      return true;
    });
    if (carried >= 0) {
      named[carried] = {static_cast<int>(i), 0};
      continue;
    }
    const int split_from = find_output([&](size_t j) {
      if (j + 1 >= target.size() || split % target[j] != 0 || split == target[j]) return false;
      const int64_t rest = split / target[j];
      return target[j + 1] % rest == 0 && Inner(target, out_period, j + 1) >= Inner(in, in_period, i);
    });
    if (split_from >= 0) {
      parts[i] = {target[split_from], split / target[split_from]};
      named[split_from] = {static_cast<int>(i), 0};
      named[split_from + 1] = {static_cast<int>(i), 1};
      continue;
    }
    // Output dimension j spans i, i+1 and only unsplit dimensions after them.
    const int merged = i + 1 < n && split == in[i] && s[0][i + 1] > 1 ? find_output([&](size_t j) {
      const int64_t inner = Inner(target, out_period, j);
      if (inner > Inner(in, in_period, i + 1)) return false;
      for (size_t k = i + 2; k < n; ++k)
        if (s[0][k] > 1 && Inner(in, in_period, k) >= inner) return false;
      return true;
    })
                                                                      : -1;
    if (merged >= 0) {
      merged_into_previous[i + 1] = 1;
      named[merged] = {static_cast<int>(i), 0};
      continue;
    }
    gathered.push_back(static_cast<int>(i));
  }
  // The output's device matrix and where each input part lands in it.
  Shape matrix;
  std::vector<std::vector<int>> position(n);
  for (size_t i = 0; i < n; ++i)
    for (int64_t size : parts[i]) {
      if (merged_into_previous[i] && position[i].empty()) {
        matrix.back() *= size;
      } else {
        matrix.push_back(size);
      }
      position[i].push_back(static_cast<int>(matrix.size()) - 1);
    }
  TensorMap out_map(target.size(), kNotSplit);
  for (size_t j = 0; j < target.size(); ++j)
    if (named[j].first >= 0) out_map[j] = MapValueFromDim(position[named[j].first][named[j].second], matrix.size());
  out.outputs = {out_map};
  if (matrix != out.device_matrix) out.output_matrix = matrix;
  if (!gathered.empty()) out.forward.push_back({Collective::kAllGather, ReduceOp::kNone, gathered, 0});
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) { return PerDimAxes(ctx.inputs[0].shape.size(), {0}); }

}  // namespace

OpFamily ReshapeFamily() { return {"reshape", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
