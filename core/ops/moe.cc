// MoeDispatch and MoeCombine (MindSpore's MoeInitRouting / MoeFinalizeRouting
// pair): token routing inside each group of tokens. Only the group dimension
// and the hidden dimension can be split; every device then routes its own
// groups' tokens, without communication. Expert parallelism comes from the
// experts' BatchMatMuls splitting the expert dimension instead of the groups:
// the redistribution between the two layouts is MindSpore's AlltoAll.
#include <algorithm>

#include <fmt/format.h>

#include "core/ops/op_family.h"

namespace shardlab {
namespace {

void RequireOnly(const Strategy& s, size_t tuple, const std::vector<size_t>& splittable, const char* what) {
  for (size_t d = 0; d < s[tuple].size(); ++d) {
    const bool allowed = std::find(splittable.begin(), splittable.end(), d) != splittable.end();
    if (!allowed && s[tuple][d] != 1)
      throw LayoutError(fmt::format("{} can split only its groups and hidden dimensions, not dimension {} of {}", what,
                                    d, tuple == 0 ? "its first input" : "its routing inputs"));
  }
}

BaseLayout Infer(const OpContext& ctx, const Strategy& s) {
  const bool dispatch = ctx.op.type == "MoeDispatch";
  const size_t hidden = dispatch ? 2 : 3;
  RequireOnly(s, 0, {0, hidden}, ctx.op.type.c_str());
  for (size_t t = 1; t < s.size(); ++t) {
    RequireOnly(s, t, {0}, ctx.op.type.c_str());
    if (s[t][0] != s[0][0])
      throw LayoutError(fmt::format("{} must split the groups of its routing inputs like its first input ({} vs {})",
                                    ctx.op.type, s[t][0], s[0][0]));
  }
  // Device matrix [groups, hidden]: map value 1 is the groups, 0 the hidden split.
  BaseLayout out;
  out.device_matrix = {s[0][0], s[0][hidden]};
  const TensorMap routing = {1, kNotSplit, kNotSplit};
  if (dispatch) {
    out.inputs = {{1, kNotSplit, 0}, routing};
    out.outputs = {{1, kNotSplit, kNotSplit, 0}};
  } else {
    out.inputs = {{1, kNotSplit, kNotSplit, 0}, routing, routing};
    out.outputs = {{1, kNotSplit, 0}};
  }
  return out;
}

std::vector<StrategyAxis> Axes(const OpContext& ctx) {
  const bool dispatch = ctx.op.type == "MoeDispatch";
  StrategyAxis groups;
  for (int t = 0; t < static_cast<int>(ctx.inputs.size()); ++t) groups.positions.emplace_back(t, 0);
  return {groups, {{{0, dispatch ? 2 : 3}}}};
}

}  // namespace

OpFamily MoeFamily() { return {"moe", &InputShapes, &Infer, &Axes, &NoWeights}; }

}  // namespace shardlab
