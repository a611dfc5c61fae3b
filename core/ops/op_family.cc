#include "core/ops/op_family.h"

#include <map>

#include "core/graph/op_types.h"

namespace shardlab {

std::vector<Shape> InputShapes(const OpContext& ctx) {
  std::vector<Shape> shapes;
  for (const auto& t : ctx.inputs) shapes.push_back(t.shape);
  return shapes;
}

TensorMap FullMap(size_t rank) {
  TensorMap map(rank);
  for (size_t i = 0; i < rank; ++i) map[i] = static_cast<int64_t>(rank - 1 - i);
  return map;
}

std::vector<StrategyAxis> PerDimAxes(size_t rank, const std::vector<int>& tuples) {
  std::vector<StrategyAxis> axes(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int t : tuples) axes[d].positions.emplace_back(t, static_cast<int>(d));
  return axes;
}

std::vector<int> NoWeights(const OpContext&) { return {}; }

const OpFamily& FamilyOf(const std::string& op_type) {
  static const std::map<std::string, OpFamily> families = [] {
    std::map<std::string, OpFamily> m;
    for (OpFamily f : {MatMulFamily(), ElementwiseFamily(), BiasAddFamily(), ActivationFamily(), SoftmaxFamily(),
                       LayerNormFamily(), ReduceFamily(), GatherFamily(), ReshapeFamily(), TransposeFamily(),
                       OneHotFamily(), LossFamily(), ConvFamily(), PoolFamily(), BatchNormFamily(),
                       FlashAttentionFamily(), MoeFamily(), ConcatFamily(), BroadcastFamily()})
      m.emplace(f.name, f);
    // Dropout shares the activation rule.
    m.emplace("dropout", ActivationFamily());
    return m;
  }();
  const OpTypeInfo* type = FindOpType(op_type);
  if (!type) throw LayoutError("unknown operator type \"" + op_type + "\"");
  auto it = families.find(type->family);
  if (it == families.end())
    throw LayoutError("no sharding rule for operator family \"" + std::string(type->family) + "\"");
  return it->second;
}

}  // namespace shardlab
