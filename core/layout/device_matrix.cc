#include "core/layout/device_matrix.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardlab {

std::string DeviceMatrixProblem(const Shape& dims) {
  if (dims.size() > kMaxDeviceMatrixDims)
    return "a device matrix has at most " + std::to_string(kMaxDeviceMatrixDims) + " dimensions, this one " +
           std::to_string(dims.size());
  int64_t size = 1;
  for (int64_t d : dims) {
    if (d < 1) return "device matrix dimensions must be >= 1";
    if (d > kMaxDeviceMatrixDevices / size)
      return "a device matrix holds at most " + std::to_string(kMaxDeviceMatrixDevices) + " devices";
    size *= d;
  }
  return "";
}

DeviceMatrix::DeviceMatrix(Shape dims, std::vector<int64_t> ranks) : dims_(std::move(dims)), ranks_(std::move(ranks)) {
  if (const std::string problem = DeviceMatrixProblem(dims_); !problem.empty()) throw std::invalid_argument(problem);
  int64_t size = 1;
  for (int64_t d : dims_) size *= d;
  if (ranks_.empty()) {
    ranks_.resize(size);
    for (int64_t i = 0; i < size; ++i) ranks_[i] = i;
  }
  if (static_cast<int64_t>(ranks_.size()) != size)
    throw std::invalid_argument("device matrix of " + std::to_string(size) + " devices given " +
                                std::to_string(ranks_.size()) + " ranks");
  strides_.assign(dims_.size(), 1);
  for (int i = static_cast<int>(dims_.size()) - 2; i >= 0; --i) strides_[i] = strides_[i + 1] * dims_[i + 1];
}

int64_t DeviceMatrix::PositionOf(int64_t rank) const {
  auto it = std::find(ranks_.begin(), ranks_.end(), rank);
  if (it == ranks_.end()) throw std::invalid_argument("rank " + std::to_string(rank) + " is not in the device matrix");
  return it - ranks_.begin();
}

std::vector<int64_t> DeviceMatrix::Coordinates(int64_t rank) const {
  int64_t position = PositionOf(rank);
  std::vector<int64_t> coordinates(dims_.size());
  for (size_t i = 0; i < dims_.size(); ++i) {
    coordinates[i] = position / strides_[i];
    position %= strides_[i];
  }
  return coordinates;
}

int64_t DeviceMatrix::RankAt(const std::vector<int64_t>& coordinates) const {
  int64_t position = 0;
  for (size_t i = 0; i < dims_.size(); ++i) position += coordinates[i] * strides_[i];
  return ranks_[position];
}

std::vector<int64_t> DeviceMatrix::GroupAlongDims(int64_t rank, const std::vector<int>& dims) const {
  const std::vector<int64_t> base = Coordinates(rank);
  std::vector<int64_t> group;
  int64_t count = 1;
  for (int d : dims) count *= dims_[d];
  group.reserve(count);
  std::vector<int64_t> coordinates = base;
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;  // the last listed dimension varies fastest
    for (int k = static_cast<int>(dims.size()) - 1; k >= 0; --k) {
      coordinates[dims[k]] = rest % dims_[dims[k]];
      rest /= dims_[dims[k]];
    }
    group.push_back(RankAt(coordinates));
  }
  return group;
}

std::vector<int64_t> DeviceMatrix::GroupAlongDim(int64_t rank, int dim) const { return GroupAlongDims(rank, {dim}); }

std::vector<int64_t> DeviceMatrix::GroupByTensorMap(int64_t rank, const TensorMap& map) const {
  std::vector<int> free_dims;
  for (size_t d = 0; d < dims_.size(); ++d) {
    const int64_t value = MapValueFromDim(static_cast<int>(d), dims_.size());
    if (std::find(map.begin(), map.end(), value) == map.end()) free_dims.push_back(static_cast<int>(d));
  }
  return GroupAlongDims(rank, free_dims);
}

}  // namespace shardlab
