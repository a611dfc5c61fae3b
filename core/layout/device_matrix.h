// A device matrix: the devices of a pipeline stage laid out row-major in an
// N-dimensional arrangement (the last dimension varies fastest). It answers
// which coordinates a rank has and which ranks form the communication groups
// along a dimension or share a tensor slice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layout/tensor_map.h"

namespace shardlab {

// The largest device matrix shardlab takes (a cluster's devices at most, in
// no more dimensions than anyone splits tensors over).
inline constexpr size_t kMaxDeviceMatrixDims = 16;
inline constexpr int64_t kMaxDeviceMatrixDevices = 131072;

// Why `dims` is no device matrix (an entry below 1, too many dimensions or
// devices), or "" when it is one.
std::string DeviceMatrixProblem(const Shape& dims);

class DeviceMatrix {
 public:
  // `ranks` lists the stage's devices in order (need not be sorted); empty means 0..size-1.
  explicit DeviceMatrix(Shape dims, std::vector<int64_t> ranks = {});

  const Shape& dims() const { return dims_; }
  int64_t size() const { return static_cast<int64_t>(ranks_.size()); }
  const std::vector<int64_t>& ranks() const { return ranks_; }

  // Coordinates (one per dimension, first dimension first) of a rank of this matrix.
  std::vector<int64_t> Coordinates(int64_t rank) const;
  int64_t RankAt(const std::vector<int64_t>& coordinates) const;

  // Ranks that differ from `rank` only along dimension `dim` (0 = first), in coordinate order.
  std::vector<int64_t> GroupAlongDim(int64_t rank, int dim) const;
  // Ranks that hold the same slice as `rank` for a tensor with this map: equal
  // coordinates on every dimension the map names, any coordinate elsewhere.
  std::vector<int64_t> GroupByTensorMap(int64_t rank, const TensorMap& map) const;
  // Ranks that differ from `rank` only along the given dimensions (0 = first).
  std::vector<int64_t> GroupAlongDims(int64_t rank, const std::vector<int>& dims) const;

 private:
  int64_t PositionOf(int64_t rank) const;

  Shape dims_;
  std::vector<int64_t> ranks_;
  std::vector<int64_t> strides_;
};

}  // namespace shardlab
