// FlashAttentionScore(query, key, value), BNSD layout, as MindSpore's
// FlashAttentionScoreInfo splits it: batch and heads split alike on all three
// inputs (key/value heads must divide, so grouped-query attention keeps each
// query head with its key/value head); the query's sequence may be split too,
// each device then attending from its query rows to the whole key and value
// (whose gradients are summed over that split in backward). Head_dim and the
// key/value sequence cannot be split.
#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  if (s[0][3] != 1) throw LayoutError("FlashAttentionScore cannot split head_dim");
  for (int kv = 1; kv <= 2; ++kv) {
    if (s[kv][0] != s[0][0] || s[kv][1] != s[0][1])
      throw LayoutError("FlashAttentionScore's key and value must be split like the query on batch and heads");
    if (s[kv][2] != 1 || s[kv][3] != 1)
      throw LayoutError("FlashAttentionScore cannot split the key/value sequence or head_dim");
  }
  BaseLayout out;
  out.device_matrix = s[0];
  const TensorMap full = FullMap(4);
  const TensorMap kv = {full[0], full[1], kNotSplit, kNotSplit};
  out.inputs = {full, kv, kv};
  out.outputs = {full};
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext&) {
  return {{{{0, 0}, {1, 0}, {2, 0}}}, {{{0, 1}, {1, 1}, {2, 1}}}, {{{0, 2}}}};
}

}  // namespace

OpFamily FlashAttentionFamily() { return {"flash_attention", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
