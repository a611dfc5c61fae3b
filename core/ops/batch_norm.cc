// BatchNorm(x, scale, bias, mean, variance): batch and channels can be
// split; the four per-channel tensors follow the channel split. Statistics
// are per device (MindSpore's BatchNorm; SyncBatchNorm is a separate op).
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  for (size_t d = 2; d < s[0].size(); ++d)
    if (s[0][d] != 1) throw LayoutError("BatchNorm cannot split the spatial dimensions");
  for (int p = 1; p <= 4; ++p)
    if (s[p][0] != s[0][1]) throw LayoutError("BatchNorm's per-channel inputs must be split like the channels");
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(s[0].size());
  out.inputs = {full, {full[1]}, {full[1]}, {full[1]}, {full[1]}};
  out.outputs = {full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext&) { return {{{{0, 0}}}, {{{0, 1}, {1, 0}, {2, 0}, {3, 0}, {4, 0}}}}; }

std::vector<int> Weights(const OpContext&) { return {1, 2}; }

}  // namespace

OpFamily BatchNormFamily() { return {"batch_norm", &InputShapes, &Infer, &Axes, &Weights}; }

}  // namespace shardlab
