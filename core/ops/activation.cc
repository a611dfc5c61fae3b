// Activations (ReLU, GeLU, FastGeLU, Tanh, Sigmoid, SiLU), Cast and Dropout: the
// device matrix is the strategy and every map is the identity.
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  BaseLayout out;
  out.device_matrix = s[0];
  out.inputs = {FullMap(s[0].size())};
  out.outputs = {FullMap(s[0].size())};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) { return PerDimAxes(ctx.inputs[0].shape.size(), {0}); }

}  // namespace

OpFamily ActivationFamily() { return {"activation", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
