// A tensor layout: how one tensor is spread over a device arrangement. It is
// the triple MindSpore uses (device arrangement, tensor map, tensor shape),
// with the operations redistribution needs: normalisation, slice shapes and
// refinements of the device arrangement and of the tensor shape.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "core/layout/tensor_map.h"

namespace shardlab {

// A layout or strategy that breaks a rule; the message says which.
class LayoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TensorLayout {
 public:
  TensorLayout() = default;
  // Checks: every map entry is -1 or names a device dimension, no device
  // dimension is named twice, one map entry per tensor dimension, each split
  // dimension divisible by its device dimension.
  TensorLayout(Shape device_arrangement, TensorMap tensor_map, Shape tensor_shape);

  const Shape& device_arrangement() const { return device_arrangement_; }
  const TensorMap& tensor_map() const { return tensor_map_; }
  const Shape& tensor_shape() const { return tensor_shape_; }
  int64_t device_count() const;

  Shape SliceShape() const;
  // Device dimension (0 = first) a tensor dimension is split along, or -1.
  int SplitDim(size_t tensor_dim) const;
  // The number of devices holding each slice (product of unnamed device dimensions).
  int64_t ReplicaCount() const;

  // Device dimensions of size 1 removed, map renumbered (dev [16,1,1] map [2,0] -> dev [16] map [0,-1]).
  TensorLayout Normalized() const;
  // Unsplit tensor dimensions of size 1 removed (a scalar becomes shape [1], map [-1]).
  TensorLayout Squeezed() const;

  // The same distribution over a finer device arrangement (each original
  // dimension a run of consecutive new ones); split tensor dimensions are
  // factored accordingly. nullopt when `refined` does not refine the arrangement.
  std::optional<TensorLayout> ExpandDeviceArrangement(const Shape& refined) const;

  // The same distribution over a finer tensor shape (each original dimension a
  // run of consecutive new ones). Returns the layout, or, when a split must
  // cover several new dimensions, the device arrangement that has to be
  // refined first (in `needed_arrangement`). nullopt with neither when the
  // shapes cannot be reconciled.
  struct ShapeExpansion;
  ShapeExpansion ExpandTensorShape(const Shape& refined) const;

  bool operator==(const TensorLayout&) const = default;
  std::string ToString() const;

 private:
  Shape device_arrangement_;
  TensorMap tensor_map_;
  Shape tensor_shape_;
};

struct TensorLayout::ShapeExpansion {
  std::optional<TensorLayout> layout;
  std::optional<Shape> needed_arrangement;
};

// The coarsest common refinement of two shapes with equal products (the union
// of their prefix products), or nullopt when their factors do not nest.
std::optional<Shape> CommonRefinement(const Shape& a, const Shape& b);

}  // namespace shardlab
