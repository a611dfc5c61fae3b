// Output shapes and dtypes of every operator type from its input tensors and
// attributes, with MindSpore's shape rules. The graph builder and the graph
// JSON loader both go through here, so a graph is always shape-consistent.
#pragma once

#include <optional>
#include <vector>

#include "core/graph/graph.h"

namespace shardlab {

struct TensorType {
  Shape shape;
  DType dtype = DType::kFloat32;
};

// Throws GraphError naming the operator and the rule it breaks.
std::vector<TensorType> InferOutputs(const Operator& op, const std::vector<TensorType>& inputs);

// The shape numpy broadcasting gives two shapes, or nullopt if incompatible.
std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b);

// A possibly negative axis made non-negative; nullopt when out of range.
std::optional<int64_t> NormalizeAxis(int64_t axis, int64_t rank);

// The operator's `axis` attribute made non-negative; `fallback` when it is
// absent or empty (an empty fallback means every axis). Throws GraphError
// for an axis out of range.
std::vector<int64_t> NormalizedAxes(const Operator& op, int64_t rank, std::vector<int64_t> fallback);

// Where a FlashAttentionScore's input_layout puts each dimension of its
// query, key, value and output: BNSD [batch, heads, seq, head_dim] (the
// default) or BSND [batch, seq, heads, head_dim].
struct AttentionDims {
  int batch = 0, heads = 1, seq = 2, head_dim = 3;
};
AttentionDims FlashAttentionDims(const Operator& op);

}  // namespace shardlab
