// MatMul and BatchMatMul: device matrix = batch strategies, then [m, k, n];
// the reduction dimension k must be split alike in both inputs, and when it is
// split an AllReduce(sum) over the k dimension follows the product. Batch
// dimensions broadcast numpy-style, the shorter input aligned to the right.
// With the `forward_reduce_scatter` attribute (2-D inputs) the partial
// products meet in a ReduceScatter instead, leaving the output rows split over
// both the m and the k dimensions (device matrix [m*k, n] for the output).
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

struct MatMulDims {
  size_t ra, rb, n;  // ranks and the longer rank
  bool ta, tb;
  // Strategy-tuple positions of m, k in A and k, n in B.
  int a_m, a_k, b_k, b_n;
};

MatMulDims Dims(const OpContext& ctx) {
  MatMulDims d;
  d.ra = ctx.inputs[0].shape.size();
  d.rb = ctx.inputs[1].shape.size();
  d.n = std::max(d.ra, d.rb);
  d.ta = ctx.op.BoolAttr("transpose_a", false);
  d.tb = ctx.op.BoolAttr("transpose_b", false);
  const int ra = static_cast<int>(d.ra), rb = static_cast<int>(d.rb);
  d.a_m = d.ta ? ra - 1 : ra - 2;
  d.a_k = d.ta ? ra - 2 : ra - 1;
  d.b_k = d.tb ? rb - 1 : rb - 2;
  d.b_n = d.tb ? rb - 2 : rb - 1;
  return d;
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const MatMulDims d = Dims(ctx);
  const Shape &a = ctx.inputs[0].shape, &b = ctx.inputs[1].shape;
  if (s[0][d.a_k] != s[1][d.b_k])
    throw LayoutError(fmt::format("the reduction dimension is split {} ways in the first input but {} in the second",
                                  s[0][d.a_k], s[1][d.b_k]));
  const size_t batch = d.n - 2;
  BaseLayout out;
  TensorMap batch_a, batch_b, batch_out;
  for (size_t i = 0; i < batch; ++i) {
    const int ia = static_cast<int>(i) - static_cast<int>(d.n - d.ra);
    const int ib = static_cast<int>(i) - static_cast<int>(d.n - d.rb);
    const int64_t sa = ia >= 0 ? s[0][ia] : 1, sb = ib >= 0 ? s[1][ib] : 1;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da > 1 && db > 1 && sa != sb)
      throw LayoutError(
          fmt::format("batch dimension {} is split {} ways in the first input but {} in the second", i, sa, sb));
    if ((da == 1 && sa > 1) || (db == 1 && sb > 1))
      throw LayoutError(fmt::format("batch dimension {} has size 1 and cannot be split", i));
    out.device_matrix.push_back(std::max(sa, sb));
    const int64_t value = static_cast<int64_t>(d.n - i);
    if (ia >= 0) batch_a.push_back(da > 1 || db == 1 ? value : kNotSplit);
    if (ib >= 0) batch_b.push_back(db > 1 || da == 1 ? value : kNotSplit);
    batch_out.push_back(value);
  }
  out.device_matrix.push_back(s[0][d.a_m]);
  out.device_matrix.push_back(s[0][d.a_k]);
  out.device_matrix.push_back(s[1][d.b_n]);
  // Values on a matrix of n+1 dims: m -> 2, k -> 1, n -> 0.
  TensorMap map_a = batch_a, map_b = batch_b, map_out = batch_out;
  if (d.ta)
    map_a.insert(map_a.end(), {1, 2});
  else
    map_a.insert(map_a.end(), {2, 1});
  if (d.tb)
    map_b.insert(map_b.end(), {0, 1});
  else
    map_b.insert(map_b.end(), {1, 0});
  map_out.insert(map_out.end(), {2, 0});
  out.inputs = {map_a, map_b};
  out.outputs = {map_out};
  if (s[0][d.a_k] > 1) {
    const int k_dim = static_cast<int>(d.n) - 1;
    if (ctx.op.BoolAttr("forward_reduce_scatter", false) && d.ra == 2 && d.rb == 2) {
      out.forward.push_back({Collective::kReduceScatter, ReduceOp::kSum, {k_dim}, 0});
      out.merged_output_dim = 0;  // [m, k, n] -> [m*k, n]
      out.outputs = {{1, 0}};
      if (ctx.outputs[0].shape[0] % (s[0][d.a_m] * s[0][d.a_k]) != 0)
        throw LayoutError("ReduceScatter needs the output rows divisible by the m and k splits together");
    } else {
      out.forward.push_back({Collective::kAllReduce, ReduceOp::kSum, {k_dim}, 0});
    }
  }
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  const MatMulDims d = Dims(ctx);
  std::vector<StrategyAxis> axes;
  for (size_t i = 0; i + 2 < d.n; ++i) {
    StrategyAxis axis;
    const int ia = static_cast<int>(i) - static_cast<int>(d.n - d.ra);
    const int ib = static_cast<int>(i) - static_cast<int>(d.n - d.rb);
    if (ia >= 0 && ctx.inputs[0].shape[ia] > 1) axis.positions.emplace_back(0, ia);
    if (ib >= 0 && ctx.inputs[1].shape[ib] > 1) axis.positions.emplace_back(1, ib);
    if (!axis.positions.empty()) axes.push_back(axis);
  }
  axes.push_back({{{0, d.a_m}}});
  axes.push_back({{{0, d.a_k}, {1, d.b_k}}});
  axes.push_back({{{1, d.b_n}}});
  return axes;
}

std::vector<int> Weights(const OpContext& ctx) {
  // MatMul's second input is its weight; BatchMatMul multiplies activations.
  return ctx.op.type == "MatMul" ? std::vector<int>{1} : std::vector<int>{};
}

}  // namespace

OpFamily MatMulFamily() { return {"matmul", &InputShapes, &Infer, &Axes, &Weights}; }

}  // namespace shardlab
