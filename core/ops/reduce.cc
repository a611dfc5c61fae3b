// ReduceSum, ReduceMean, ReduceMax, ReduceMin: the output drops (or, with
// keep_dims, unsplits) the reduced dimensions; when a reduced dimension is
// split the partial results meet in an AllReduce over those dimensions (sum
// for Sum and Mean, followed by a division for Mean; max or min otherwise).
#include <algorithm>

#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

std::vector<int64_t> ReducedAxes(const OpContext& ctx) {
  return NormalizedAxes(ctx.op, static_cast<int64_t>(ctx.inputs[0].shape.size()), {});
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const auto axes = ReducedAxes(ctx);
  const bool keep = ctx.op.BoolAttr("keep_dims", false);
  const size_t rank = ctx.inputs[0].shape.size();
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(rank);
  out.inputs = {full};
  TensorMap out_map;
  std::vector<int> split_reduced;
  for (size_t i = 0; i < rank; ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!reduced)
      out_map.push_back(full[i]);
    else if (keep)
      out_map.push_back(kNotSplit);
    if (reduced && s[0][i] > 1) split_reduced.push_back(static_cast<int>(i));
  }
  out.outputs = {out_map};
  if (!split_reduced.empty()) {
    const std::string& t = ctx.op.type;
    const ReduceOp reduce = t == "ReduceMax"    ? ReduceOp::kMax
                            : t == "ReduceMin"  ? ReduceOp::kMin
                            : t == "ReduceMean" ? ReduceOp::kMean
                                                : ReduceOp::kSum;
    out.forward.push_back({Collective::kAllReduce, reduce, split_reduced, 0});
  }
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) { return PerDimAxes(ctx.inputs[0].shape.size(), {0}); }

}  // namespace

OpFamily ReduceFamily() { return {"reduce", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
