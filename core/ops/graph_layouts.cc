#include "core/ops/graph_layouts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shardlab {
namespace {

// The split counts of a tensor as its producer lays it out.
std::optional<Strategy> ProducerSplit(const Graph& graph, const std::vector<OpLayout>& layouts, int tensor) {
  const int producer = graph.tensor(tensor).producer;
  if (producer < 0) return std::nullopt;
  const Operator& op = graph.op(producer);
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    if (op.outputs[i] != tensor) continue;
    const TensorLayout& layout = layouts[producer].outputs[i];
    std::vector<int64_t> split;
    const Shape slice = layout.SliceShape();
    for (size_t d = 0; d < slice.size(); ++d) split.push_back(layout.tensor_shape()[d] / slice[d]);
    return Strategy{split};
  }
  return std::nullopt;
}

}  // namespace

std::vector<OpLayout> InferGraphLayouts(const Graph& graph, int64_t stage_devices, ReshapeStrategy reshape) {
  std::vector<OpLayout> layouts;
  layouts.reserve(graph.operators().size());
  for (const Operator& op : graph.operators()) {
    const auto inputs = TensorTypes(graph, op.inputs);
    const auto outputs = TensorTypes(graph, op.outputs);
    const std::vector<int> weights = ParameterInputs(graph, op);
    const bool is_reshape = op.IsView();
    if (is_reshape && op.strategy && reshape == ReshapeStrategy::kFollowsInput)
      FailConfiguredStrategy(op, fmt::format("a {} strategy cannot be configured; it follows its input", op.type));
    Strategy strategy;
    if (op.strategy) {
      strategy = *op.strategy;
    } else if (auto split = is_reshape ? ProducerSplit(graph, layouts, op.inputs[0]) : std::nullopt) {
      strategy = *split;
    } else {
      strategy = DataParallelStrategy(op, inputs, outputs, stage_devices, weights);
    }
    try {
      layouts.push_back(InferOpLayout(op, inputs, outputs, strategy, stage_devices, weights));
    } catch (const LayoutError& e) {
      if (op.strategy) FailConfiguredStrategy(op, e.what());
      throw LayoutError(fmt::format("operator \"{}\": {}", op.name, e.what()));
    }
  }
  CheckSharedParameters(graph, layouts);
  return layouts;
}

void FailConfiguredStrategy(const Operator& op, const std::string& problem) {
  const std::string message = fmt::format("operator \"{}\": {}", op.name, problem);
  if (op.strategy_source.empty()) throw LayoutError(message);
  throw ConfigError(op.strategy_source, message);
}

void CheckSharedParameters(const Graph& graph, const std::vector<OpLayout>& layouts) {
  for (int param : graph.Parameters()) {
    const auto& users = graph.Consumers(param);
    if (users.size() < 2) continue;
    auto layout_in = [&](int op_index) {
      const Operator& op = graph.op(op_index);
      for (size_t i = 0; i < op.inputs.size(); ++i)
        if (op.inputs[i] == param) return layouts[op_index].inputs[i].Normalized();
      return TensorLayout();
    };
    const TensorLayout first = layout_in(users[0]);
    for (size_t u = 1; u < users.size(); ++u) {
      const TensorLayout other = layout_in(users[u]);
      if (other == first) continue;
      throw LayoutError(fmt::format(
          "parameter \"{}\" is shared by operators \"{}\" and \"{}\" with different layouts ({} and {}); a shared "
          "parameter needs the same layout in every operator that uses it",
          graph.tensor(param).name, graph.op(users[0]).name, graph.op(users[u]).name, first.ToString(),
          other.ToString()));
    }
  }
}

}  // namespace shardlab
