// FlashAttentionScore(query, key, value), BNSD or BSND layout, as MindSpore's
// FlashAttentionScoreInfo splits it: batch and heads split alike on all three
// inputs (key/value heads must divide, so grouped-query attention keeps each
// query head with its key/value head); the query's sequence may be split too
// (context parallel), each device then attending from its query rows to the
// whole key and value, which are gathered over that split (and their
// gradients reduce-scattered in backward). Head_dim and the key/value
// sequence cannot be split. The device matrix follows the tensor's own
// dimension order, so in BSND the sequence split lies outside the heads'
// (MindFormers' (dp, cp, mp)).
#include <fmt/format.h>

#include "core/graph/shape_inference.h"
#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const AttentionDims a = FlashAttentionDims(ctx.op);
  if (s[0][a.head_dim] != 1) throw LayoutError("FlashAttentionScore cannot split head_dim");
  for (int kv = 1; kv <= 2; ++kv) {
    if (s[kv][a.batch] != s[0][a.batch] || s[kv][a.heads] != s[0][a.heads])
      throw LayoutError("FlashAttentionScore's key and value must be split like the query on batch and heads");
    if (s[kv][a.seq] != 1 || s[kv][a.head_dim] != 1)
      throw LayoutError("FlashAttentionScore cannot split the key/value sequence or head_dim");
  }
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(4);
  TensorMap kv = full;
  kv[a.seq] = kv[a.head_dim] = kNotSplit;
  out.inputs = {full, kv, kv};
  out.outputs = {full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  const AttentionDims a = FlashAttentionDims(ctx.op);
  return {{{{0, a.batch}, {1, a.batch}, {2, a.batch}}}, {{{0, a.heads}, {1, a.heads}, {2, a.heads}}}, {{{0, a.seq}}}};
}

}  // namespace

OpFamily FlashAttentionFamily() { return {"flash_attention", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
