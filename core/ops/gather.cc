// Gather (embedding lookup) of `indices` from `params` along `axis`.
// Axis not split: device matrix = params strategy then indices strategy; the
// output takes the params map with the axis entry replaced by the indices map.
// Axis split (a model-parallel vocabulary, axis 0 of a 1-D or 2-D table):
// device matrix = indices strategy, then the table's strategy reversed (rows
// innermost); every device looks up its own row range, masks the rest, and
// the partial results meet in an AllReduce(sum) over the row split; the indices
// may be split too (newer MindSpore: output strategy = indices strategy, then
// the table's other dimensions), and the strategy must use every device.
// A batch-local Gather (attr "batch_local": indices address rows of the
// device's own batch slice, as in MindSpore's data-parallel BERT, where each
// device runs the network on its batch and computes the offsets from it)
// split alike on the rows and the indices gathers locally: no communication.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

int64_t GatherAxis(const OpContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.size());
  auto axis = NormalizeAxis(ctx.op.IntAttr("axis", 0), rank);
  if (!axis) throw LayoutError("Gather's axis is out of range");
  return *axis;
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const int64_t axis = GatherAxis(ctx);
  const size_t rp = ctx.inputs[0].shape.size(), ri = ctx.inputs[1].shape.size();
  BaseLayout out;
  if (s[0][axis] == 1) {
    out.device_matrix = s[0];
    out.device_matrix.insert(out.device_matrix.end(), s[1].begin(), s[1].end());
    const TensorMap full = FullMap(rp + ri);
    const TensorMap params(full.begin(), full.begin() + static_cast<long>(rp));
    const TensorMap indices(full.begin() + static_cast<long>(rp), full.end());
    TensorMap output(params.begin(), params.begin() + axis);
    output.insert(output.end(), indices.begin(), indices.end());
    output.insert(output.end(), params.begin() + axis + 1, params.end());
    out.inputs = {params, indices};
    out.outputs = {output};
    return out;
  }
  if (ctx.op.BoolAttr("batch_local", false)) {
    if (axis != 0 || s[1][0] != s[0][0])
      throw LayoutError("a batch-local Gather splits its rows and its indices' first dimension alike");
    out.device_matrix = s[0];
    out.device_matrix.insert(out.device_matrix.end(), s[1].begin() + 1, s[1].end());
    const TensorMap full = FullMap(rp + ri - 1);
    const TensorMap params(full.begin(), full.begin() + static_cast<long>(rp));
    TensorMap indices = {params[0]};
    indices.insert(indices.end(), full.begin() + static_cast<long>(rp), full.end());
    TensorMap output = indices;
    output.insert(output.end(), params.begin() + 1, params.end());
    out.inputs = {params, indices};
    out.outputs = {output};
    return out;
  }
  if (axis != 0 || rp > 2) throw LayoutError("Gather can split its axis only for axis 0 of a 1-D or 2-D table");
  // MindSpore's device matrix here: the indices' strategy, then the table's
  // reversed, so the table's rows are the innermost dimension (a vocabulary
  // group of consecutive ranks, as the LM head's MatMul lays the same table).
  out.device_matrix = s[1];
  out.device_matrix.insert(out.device_matrix.end(), s[0].rbegin(), s[0].rend());
  const TensorMap full = FullMap(rp + ri);
  const TensorMap indices(full.begin(), full.begin() + static_cast<long>(ri));
  TensorMap params;
  for (size_t j = 0; j < rp; ++j) params.push_back(static_cast<int64_t>(j));
  TensorMap output = indices;
  output.insert(output.end(), params.begin() + 1, params.end());
  out.inputs = {params, indices};
  out.outputs = {output};
  out.forward.push_back({Collective::kAllReduce, ReduceOp::kSum, {static_cast<int>(rp + ri - 1)}, 0});
  out.allow_repeat = false;
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), {0});
  for (size_t d = 0; d < ctx.inputs[1].shape.size(); ++d) axes.push_back({{{1, static_cast<int>(d)}}});
  return axes;
}

std::vector<int> Weights(const OpContext&) { return {0}; }

}  // namespace

OpFamily GatherFamily() { return {"gather", &InputShapes, &Infer, &Axes, &Weights}; }

}  // namespace shardlab
