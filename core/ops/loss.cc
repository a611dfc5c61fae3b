// SoftmaxCrossEntropyWithLogits (per-sample loss of [batch, classes] logits
// against one-hot labels; the class dimension cannot be split, as in
// MindSpore), SigmoidCrossEntropyWithLogits (element-wise), both with one
// strategy for logits and labels; and CrossEntropyLoss, MindFormers' parallel
// loss on label indices ([batch] int): its logits may be split over classes
// too (vocabulary-parallel, as Megatron's), each device reducing its slice
// and the row maxima, sums and target logits AllReduced over that split.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

bool IsSoftmax(const OpContext& ctx) { return ctx.op.type == "SoftmaxCrossEntropyWithLogits"; }
bool IsIndexed(const OpContext& ctx) { return ctx.op.type == "CrossEntropyLoss"; }

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(s[0].size());
  if (IsIndexed(ctx)) {
    if (s[1] != std::vector<int64_t>{s[0][0]})
      throw LayoutError("CrossEntropyLoss needs its labels split like the logits' rows");
    out.inputs = {full, TensorMap{full[0]}};
    out.outputs = {TensorMap{full[0]}};
    // Costed as one AllReduce of the [rows] loss; the three partials are as small.
    if (s[0][1] > 1) out.forward.push_back({Collective::kAllReduce, ReduceOp::kSum, {1}, 0});
    return out;
  }
  if (s[0] != s[1]) throw LayoutError(ctx.op.type + " needs the same strategy for logits and labels");
  if (IsSoftmax(ctx) && s[0].back() != 1) throw LayoutError(ctx.op.type + " cannot split the class dimension");
  out.inputs = {full, full};
  out.outputs = {IsSoftmax(ctx) ? TensorMap{full[0]} : full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  if (IsIndexed(ctx)) return {{{{0, 0}, {1, 0}}}, {{{0, 1}}}};
  auto axes = PerDimAxes(ctx.inputs[0].shape.size(), {0, 1});
  if (IsSoftmax(ctx)) axes.pop_back();
  return axes;
}

}  // namespace

OpFamily LossFamily() { return {"loss", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
