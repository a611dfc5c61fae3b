#include "tests/layout/sharded_tensor.h"

#include <stdexcept>

#include "core/layout/device_matrix.h"

namespace shardlab::testing {
namespace {

int64_t Product(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * s[i + 1];
  return strides;
}

// The sub-block [begin[i], begin[i] + extent[i]) of a tensor.
LocalTensor Block(const LocalTensor& t, const std::vector<int64_t>& begin, const Shape& extent) {
  LocalTensor out{extent, std::vector<int64_t>(Product(extent))};
  const auto in_strides = Strides(t.shape);
  const auto out_strides = Strides(extent);
  for (int64_t k = 0; k < static_cast<int64_t>(out.values.size()); ++k) {
    int64_t rest = k, offset = 0;
    for (size_t d = 0; d < extent.size(); ++d) {
      offset += (begin[d] + rest / out_strides[d]) * in_strides[d];
      rest %= out_strides[d];
    }
    out.values[k] = t.values[offset];
  }
  return out;
}

LocalTensor Chunk(const LocalTensor& t, int64_t axis, int64_t count, int64_t index) {
  std::vector<int64_t> begin(t.shape.size(), 0);
  Shape extent = t.shape;
  extent[axis] /= count;
  begin[axis] = index * extent[axis];
  return Block(t, begin, extent);
}

LocalTensor Concat(const std::vector<LocalTensor>& parts, int64_t axis) {
  Shape shape = parts.front().shape;
  shape[axis] = 0;
  for (const auto& p : parts) shape[axis] += p.shape[axis];
  LocalTensor out{shape, std::vector<int64_t>(Product(shape))};
  const auto out_strides = Strides(shape);
  int64_t offset_along_axis = 0;
  for (const auto& p : parts) {
    const auto strides = Strides(p.shape);
    for (int64_t k = 0; k < static_cast<int64_t>(p.values.size()); ++k) {
      int64_t rest = k, offset = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t index = rest / strides[d];
        rest %= strides[d];
        if (static_cast<int64_t>(d) == axis) index += offset_along_axis;
        offset += index * out_strides[d];
      }
      out.values[offset] = p.values[k];
    }
    offset_along_axis += p.shape[axis];
  }
  return out;
}

}  // namespace

LocalTensor SliceFor(const TensorLayout& layout, int64_t rank) {
  LocalTensor full{layout.tensor_shape(), std::vector<int64_t>(Product(layout.tensor_shape()))};
  for (int64_t i = 0; i < static_cast<int64_t>(full.values.size()); ++i) full.values[i] = i;
  const DeviceMatrix matrix(layout.device_arrangement());
  const auto coordinates = matrix.Coordinates(rank);
  const Shape slice = layout.SliceShape();
  std::vector<int64_t> begin(slice.size(), 0);
  for (size_t i = 0; i < slice.size(); ++i)
    if (layout.SplitDim(i) >= 0) begin[i] = coordinates[layout.SplitDim(i)] * slice[i];
  return Block(full, begin, slice);
}

std::map<int64_t, LocalTensor> Execute(const std::vector<RedistOp>& ops, std::map<int64_t, LocalTensor> tensors) {
  using Kind = RedistOp::Kind;
  for (const auto& op : ops) {
    std::map<int64_t, LocalTensor> next;
    for (auto& [rank, t] : tensors) {
      // Split hands its parts (stacked on axis 0) to the Concat that follows it.
      const bool after_split = op.kind == Kind::kConcat;
      if (!after_split && t.shape != op.input_shape)
        throw std::logic_error(std::string(ToString(op.kind)) + " received an unexpected slice shape");
      if (op.kind == Kind::kReshape) {
        if (Product(op.output_shape) != Product(t.shape)) throw std::logic_error("Reshape changes the element count");
        next[rank] = {op.output_shape, t.values};
      } else if (op.kind == Kind::kStridedSlice) {
        const DeviceMatrix matrix(op.arrangement);
        next[rank] = Chunk(t, op.axis, op.count, matrix.Coordinates(rank)[op.device_dim]);
      } else if (op.kind == Kind::kAllGather) {
        const DeviceMatrix matrix(op.arrangement);
        std::vector<LocalTensor> parts;
        for (int64_t member : matrix.GroupAlongDim(rank, op.device_dim)) parts.push_back(tensors.at(member));
        next[rank] = Concat(parts, 0);
      } else if (op.kind == Kind::kSplit) {
        // Split + Concat come as a pair; Split alone keeps the parts stacked on axis 0.
        next[rank] = t;
      } else if (op.kind == Kind::kConcat) {
        std::vector<LocalTensor> parts;
        for (int64_t i = 0; i < op.count; ++i) parts.push_back(Chunk(t, 0, op.count, i));
        next[rank] = Concat(parts, op.axis);
      } else if (op.kind == Kind::kAlltoAll) {
        const DeviceMatrix matrix(op.arrangement);
        const auto group = matrix.GroupAlongDim(rank, op.device_dim);
        const int64_t me = matrix.Coordinates(rank)[op.device_dim];
        std::vector<LocalTensor> received;
        for (int64_t member : group) received.push_back(Chunk(tensors.at(member), op.split_dim, op.count, me));
        next[rank] = Concat(received, op.concat_dim);
      }
      if (op.kind != Kind::kSplit && next[rank].shape != op.output_shape)
        throw std::logic_error(std::string(ToString(op.kind)) + " produced an unexpected shape");
    }
    tensors = std::move(next);
  }
  return tensors;
}

}  // namespace shardlab::testing
