// Tensor maps and the index convention of MindSpore's tensor layouts: one
// entry per tensor dimension, -1 when the dimension is not split, otherwise
// the device-matrix dimension it is split along counted from the right
// (0 = last). Small helpers convert between the two ways of counting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardlab {

using Shape = std::vector<int64_t>;
using TensorMap = std::vector<int64_t>;

constexpr int64_t kNotSplit = -1;

// Device-matrix index (0 = first) of a tensor-map value for a matrix of `rank` dims.
inline int DimFromMapValue(int64_t map_value, size_t rank) {
  return static_cast<int>(rank) - 1 - static_cast<int>(map_value);
}
inline int64_t MapValueFromDim(int dim, size_t rank) { return static_cast<int64_t>(rank) - 1 - dim; }

}  // namespace shardlab
