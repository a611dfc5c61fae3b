#include "core/layout/tensor_layout.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/layout/device_matrix.h"

namespace shardlab {
namespace {

int64_t Product(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

// For a refinement `refined` of `original`, the [begin, end) run of refined
// dims composing each original dim; nullopt when it is not a refinement.
std::optional<std::vector<std::pair<size_t, size_t>>> Runs(const Shape& original, const Shape& refined) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t j = 0;
  for (int64_t d : original) {
    const size_t begin = j;
    if (d == 1) {
      if (j < refined.size() && refined[j] == 1) ++j;
      runs.emplace_back(begin, j);
      continue;
    }
    int64_t p = 1;
    while (j < refined.size() && p < d) p *= refined[j++];
    if (p != d) return std::nullopt;
    runs.emplace_back(begin, j);
  }
  if (j != refined.size()) return std::nullopt;
  return runs;
}

}  // namespace

std::optional<Shape> CommonRefinement(const Shape& a, const Shape& b) {
  if (Product(a) != Product(b)) return std::nullopt;
  std::set<int64_t> marks;
  int64_t p = 1;
  for (int64_t d : a) marks.insert(p *= d);
  p = 1;
  for (int64_t d : b) marks.insert(p *= d);
  Shape out;
  int64_t previous = 1;
  for (int64_t mark : marks) {
    if (mark == 1) continue;
    if (mark % previous != 0) return std::nullopt;
    out.push_back(mark / previous);
    previous = mark;
  }
  if (out.empty() && !(a.empty() && b.empty())) out.push_back(1);
  return out;
}

TensorLayout::TensorLayout(Shape device_arrangement, TensorMap tensor_map, Shape tensor_shape)
    : device_arrangement_(std::move(device_arrangement)),
      tensor_map_(std::move(tensor_map)),
      tensor_shape_(std::move(tensor_shape)) {
  const int64_t rank = static_cast<int64_t>(device_arrangement_.size());
  if (const std::string problem = DeviceMatrixProblem(device_arrangement_); !problem.empty())
    throw LayoutError(fmt::format("device matrix [{}]: {}", fmt::join(device_arrangement_, ","), problem));
  if (tensor_map_.size() != tensor_shape_.size())
    throw LayoutError(fmt::format("tensor map {} has {} entries but the tensor has {} dimensions", tensor_map_,
                                  tensor_map_.size(), tensor_shape_.size()));
  for (size_t i = 0; i < tensor_map_.size(); ++i) {
    const int64_t v = tensor_map_[i];
    if (v < -1 || v >= rank)
      throw LayoutError(fmt::format("tensor map {} names device dimension {}, but the device matrix {} has {}",
                                    tensor_map_, v, device_arrangement_, rank));
    if (v >= 0 && std::count(tensor_map_.begin(), tensor_map_.end(), v) > 1)
      throw LayoutError(fmt::format("tensor map {} names device dimension {} twice", tensor_map_, v));
    if (tensor_shape_[i] < 1) throw LayoutError(fmt::format("tensor shape {} has an entry < 1", tensor_shape_));
    if (v >= 0 && tensor_shape_[i] % device_arrangement_[DimFromMapValue(v, rank)] != 0)
      throw LayoutError(fmt::format("tensor dimension {} of shape {} cannot be split into {} slices", i, tensor_shape_,
                                    device_arrangement_[DimFromMapValue(v, rank)]));
  }
}

int64_t TensorLayout::device_count() const { return Product(device_arrangement_); }

int TensorLayout::SplitDim(size_t tensor_dim) const {
  const int64_t v = tensor_map_[tensor_dim];
  return v < 0 ? -1 : DimFromMapValue(v, device_arrangement_.size());
}

Shape TensorLayout::SliceShape() const {
  Shape slice = tensor_shape_;
  for (size_t i = 0; i < slice.size(); ++i)
    if (SplitDim(i) >= 0) slice[i] /= device_arrangement_[SplitDim(i)];
  return slice;
}

int64_t TensorLayout::ReplicaCount() const {
  int64_t named = 1;
  for (size_t i = 0; i < tensor_map_.size(); ++i)
    if (SplitDim(i) >= 0) named *= device_arrangement_[SplitDim(i)];
  return device_count() / named;
}

TensorLayout TensorLayout::Normalized() const {
  const size_t rank = device_arrangement_.size();
  Shape dev;
  std::vector<int64_t> new_index(rank, -1);  // old dim -> new dim (from the left)
  for (size_t d = 0; d < rank; ++d) {
    if (device_arrangement_[d] == 1) continue;
    new_index[d] = static_cast<int64_t>(dev.size());
    dev.push_back(device_arrangement_[d]);
  }
  TensorMap map;
  for (size_t i = 0; i < tensor_map_.size(); ++i) {
    const int d = SplitDim(i);
    map.push_back(d < 0 || new_index[d] < 0 ? kNotSplit : MapValueFromDim(static_cast<int>(new_index[d]), dev.size()));
  }
  return TensorLayout(dev, map, tensor_shape_);
}

TensorLayout TensorLayout::Squeezed() const {
  Shape shape;
  TensorMap map;
  for (size_t i = 0; i < tensor_shape_.size(); ++i) {
    if (tensor_shape_[i] == 1 && tensor_map_[i] == kNotSplit) continue;
    shape.push_back(tensor_shape_[i]);
    map.push_back(tensor_map_[i]);
  }
  if (shape.empty()) {
    shape = {1};
    map = {kNotSplit};
  }
  return TensorLayout(device_arrangement_, map, shape);
}

std::optional<TensorLayout> TensorLayout::ExpandDeviceArrangement(const Shape& refined) const {
  const auto runs = Runs(device_arrangement_, refined);
  if (!runs) return std::nullopt;
  const size_t new_rank = refined.size();
  Shape shape;
  TensorMap map;
  for (size_t i = 0; i < tensor_shape_.size(); ++i) {
    const int d = SplitDim(i);
    if (d < 0) {
      shape.push_back(tensor_shape_[i]);
      map.push_back(kNotSplit);
      continue;
    }
    // A dimension split over the run [b, e) of device dims becomes dims of
    // sizes refined[b], ..., refined[e-2], rest, each split along its device dim.
    auto [b, e] = (*runs)[d];
    if (b == e) {  // a device dim of size 1 that vanished in the refinement
      shape.push_back(tensor_shape_[i]);
      map.push_back(kNotSplit);
      continue;
    }
    int64_t outer = 1;
    for (size_t k = b; k + 1 < e; ++k) {
      shape.push_back(refined[k]);
      map.push_back(MapValueFromDim(static_cast<int>(k), new_rank));
      outer *= refined[k];
    }
    shape.push_back(tensor_shape_[i] / outer);
    map.push_back(MapValueFromDim(static_cast<int>(e - 1), new_rank));
  }
  return TensorLayout(refined, map, shape);
}

TensorLayout::ShapeExpansion TensorLayout::ExpandTensorShape(const Shape& refined) const {
  const auto runs = Runs(tensor_shape_, refined);
  if (!runs) return {};
  const size_t rank = device_arrangement_.size();
  TensorMap map;
  // Device dims that must be factored: dim -> factors (outer first).
  std::vector<std::pair<int, Shape>> factorings;
  for (size_t i = 0; i < tensor_shape_.size(); ++i) {
    auto [b, e] = (*runs)[i];
    const int d = SplitDim(i);
    if (d < 0) {
      for (size_t k = b; k < e; ++k) map.push_back(kNotSplit);
      continue;
    }
    // The split of D slices covers the outermost refined dims: whole dims
    // while D is larger, then the dim that D (what is left of it) divides.
    int64_t remaining = device_arrangement_[d];
    Shape factors;
    for (size_t k = b; k < e; ++k) {
      if (remaining == 1) {
        map.push_back(kNotSplit);
      } else if (refined[k] % remaining == 0) {
        factors.push_back(remaining);
        map.push_back(0);  // placeholder, fixed below
        remaining = 1;
      } else if (remaining % refined[k] == 0) {
        factors.push_back(refined[k]);
        map.push_back(0);
        remaining /= refined[k];
      } else {
        return {};
      }
    }
    if (remaining != 1) return {};
    if (factors.size() > 1) factorings.emplace_back(d, factors);
  }
  if (!factorings.empty()) {
    Shape arrangement;
    for (size_t d = 0; d < rank; ++d) {
      auto it = std::find_if(factorings.begin(), factorings.end(),
                             [d](const auto& f) { return f.first == static_cast<int>(d); });
      if (it == factorings.end())
        arrangement.push_back(device_arrangement_[d]);
      else
        arrangement.insert(arrangement.end(), it->second.begin(), it->second.end());
    }
    return {std::nullopt, arrangement};
  }
  // Every split now lands on exactly one refined dim: give it the original device dim.
  size_t out = 0;
  for (size_t i = 0; i < tensor_shape_.size(); ++i) {
    auto [b, e] = (*runs)[i];
    for (size_t k = b; k < e; ++k, ++out)
      if (map[out] != kNotSplit) map[out] = tensor_map_[i];
  }
  return {TensorLayout(device_arrangement_, map, refined), std::nullopt};
}

std::string TensorLayout::ToString() const {
  return fmt::format("{{device_matrix {}, tensor_map {}, shape {}}}", device_arrangement_, tensor_map_, tensor_shape_);
}

}  // namespace shardlab
