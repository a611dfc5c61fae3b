#include "gui/layout_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/layout/device_matrix.h"

namespace shardlab::gui {
namespace {

std::string DimsText(const std::vector<int>& dims) {
  std::string s;
  for (int d : dims) s += (s.empty() ? "" : ",") + std::to_string(d);
  return dims.size() == 1 ? "dim " + s : "dims " + s;
}

TensorView ViewOf(const Tensor& t, const TensorLayout& layout, const std::string& role) {
  return {t.name, role, layout.tensor_shape(), layout.tensor_map(), layout.SliceShape()};
}

// Mixed-radix position of `coords` over `dims` (first varies slowest).
int64_t Linear(const Shape& sizes, const std::vector<int>& dims, const std::vector<int64_t>& coords) {
  int64_t v = 0;
  for (int d : dims) v = v * sizes[d] + coords[d];
  return v;
}

}  // namespace

RunLayouts BuildRunLayouts(const RunSpec& run, const Graph& graph, const std::vector<OpLayout>& layouts) {
  RunLayouts r;
  r.devices_per_stage = run.parallel.devices_per_stage();
  r.devices_per_server = run.cluster.devices_per_server;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const Operator& op = graph.op(static_cast<int>(i));
    const OpLayout& l = layouts[i];
    OperatorView v;
    v.index = static_cast<int>(i);
    v.name = op.name;
    v.type = op.type;
    v.stage = op.pipeline_stage;
    v.placement = PlacementOf(run);
    v.device_matrix = l.device_matrix;
    for (size_t k = 0; k < l.inputs.size() && k < op.inputs.size(); ++k)
      v.tensors.push_back(ViewOf(graph.tensor(op.inputs[k]), l.inputs[k], fmt::format("input {}", k)));
    for (size_t k = 0; k < l.outputs.size() && k < op.outputs.size(); ++k)
      v.tensors.push_back(ViewOf(graph.tensor(op.outputs[k]), l.outputs[k], fmt::format("output {}", k)));
    for (const OpComm& c : l.forward_comm)
      v.groups.push_back(
          {fmt::format("forward {} over {}", OperatorName(c.type), DimsText(c.device_dims)), c.device_dims});
    for (const OpComm& c : l.mirror_comm)
      v.groups.push_back(
          {fmt::format("gradient AllReduce of input {} over {}", c.input, DimsText(c.device_dims)), c.device_dims});
    for (const OpComm& c : l.backward_comm)
      v.groups.push_back(
          {fmt::format("backward {} of input {} over {}", OperatorName(c.type), c.input, DimsText(c.device_dims)),
           c.device_dims});
    r.ops.push_back(std::move(v));
  }
  return r;
}

int DefaultTensor(const OperatorView& op) {
  int best = 0, best_splits = -1;
  for (size_t i = 0; i < op.tensors.size(); ++i) {
    int splits = 0;
    for (int64_t s : SplitsOf(op, op.tensors[i])) splits += s > 1;
    if (splits > best_splits) best = static_cast<int>(i), best_splits = splits;
  }
  return best;
}

int DefaultOperator(const RunLayouts& layouts) {
  for (const OperatorView& op : layouts.ops) {
    if (op.type != "MatMul" && op.type != "BatchMatMul") continue;
    for (const TensorView& t : op.tensors)
      if (t.slice != t.shape && t.role.rfind("input 1", 0) == 0) return op.index;
  }
  for (const OperatorView& op : layouts.ops)
    if (op.device_matrix.size() > 1) return op.index;
  return 0;
}

DeviceGrid::DeviceGrid(const Shape& device_matrix) : dims_(device_matrix) {
  if (dims_.empty()) dims_ = {1};
  for (int64_t d : dims_) devices_ *= d;
  for (size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i] > 1) shown_.push_back(static_cast<int>(i));
  if (shown_.size() == 1) {
    // One dimension: wrap it into rows of the smallest divisor at least its square root.
    wrapped_ = true;
    col_dim_ = shown_[0];
    const int64_t n = dims_[col_dim_];
    cell_cols_ = n;
    for (int64_t c = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n)))); c <= n; ++c)
      if (n % c == 0) {
        cell_cols_ = c;
        break;
      }
    cell_rows_ = n / cell_cols_;
  } else if (shown_.size() >= 2) {
    row_dim_ = shown_[shown_.size() - 2];
    col_dim_ = shown_[shown_.size() - 1];
    cell_rows_ = dims_[row_dim_];
    cell_cols_ = dims_[col_dim_];
    for (size_t i = 0; i + 2 < shown_.size(); ++i) {
      (i % 2 == 0 ? down_ : across_).push_back(shown_[i]);
      (i % 2 == 0 ? tile_rows_ : tile_cols_) *= dims_[shown_[i]];
    }
  }
  local_at_.assign(static_cast<size_t>(tile_rows_ * tile_cols_ * cell_rows_ * cell_cols_), -1);
  for (int64_t l = 0; l < devices_; ++l) {
    const Place p = ComputePlace(l);
    places_.push_back(p);
    local_at_[((p.tile_row * tile_cols_ + p.tile_col) * cell_rows_ + p.row) * cell_cols_ + p.col] = l;
  }
}

std::vector<int64_t> DeviceGrid::Coordinates(int64_t local) const {
  std::vector<int64_t> c(dims_.size(), 0);
  for (int i = static_cast<int>(dims_.size()) - 1; i >= 0; --i) {
    c[i] = local % dims_[i];
    local /= dims_[i];
  }
  return c;
}

DeviceGrid::Place DeviceGrid::PlaceOf(int64_t local) const { return places_[local]; }

DeviceGrid::Place DeviceGrid::ComputePlace(int64_t local) const {
  const std::vector<int64_t> c = Coordinates(local);
  Place p;
  if (wrapped_) {
    p.row = c[col_dim_] / cell_cols_;
    p.col = c[col_dim_] % cell_cols_;
    return p;
  }
  p.tile_row = Linear(dims_, down_, c);
  p.tile_col = Linear(dims_, across_, c);
  p.row = row_dim_ >= 0 ? c[row_dim_] : 0;
  p.col = col_dim_ >= 0 ? c[col_dim_] : 0;
  return p;
}

int64_t DeviceGrid::DeviceAt(const Place& p) const {
  if (p.tile_row < 0 || p.tile_row >= tile_rows_ || p.tile_col < 0 || p.tile_col >= tile_cols_ || p.row < 0 ||
      p.row >= cell_rows_ || p.col < 0 || p.col >= cell_cols_)
    return -1;
  return local_at_[((p.tile_row * tile_cols_ + p.tile_col) * cell_rows_ + p.row) * cell_cols_ + p.col];
}

std::string DeviceGrid::TileLabel(int64_t tile_row, int64_t tile_col) const {
  if (down_.empty() && across_.empty()) return "";
  const int64_t local = DeviceAt({tile_row, tile_col, 0, 0});
  const std::vector<int64_t> c = Coordinates(local);
  std::vector<int> dims = down_;
  dims.insert(dims.end(), across_.begin(), across_.end());
  std::sort(dims.begin(), dims.end());
  std::string s;
  for (int d : dims) s += fmt::format("{}d{}={}", s.empty() ? "" : " ", d, c[d]);
  return s;
}

std::string DeviceGrid::RowAxisName() const {
  if (wrapped_) return fmt::format("d{} continued ({} rows of {})", col_dim_, cell_rows_, cell_cols_);
  return row_dim_ >= 0 ? fmt::format("d{} ({})", row_dim_, dims_[row_dim_]) : "";
}

std::string DeviceGrid::ColumnAxisName() const {
  if (wrapped_) return fmt::format("d{} ({}), {} per row", col_dim_, dims_[col_dim_], cell_cols_);
  return col_dim_ >= 0 ? fmt::format("d{} ({})", col_dim_, dims_[col_dim_]) : "";
}

Shape SplitsOf(const OperatorView& op, const TensorView& tensor) {
  Shape splits(tensor.map.size(), 1);
  for (size_t j = 0; j < tensor.map.size(); ++j)
    if (tensor.map[j] != kNotSplit)
      splits[j] = op.device_matrix[DimFromMapValue(tensor.map[j], op.device_matrix.size())];
  return splits;
}

std::vector<int64_t> SliceIndex(const OperatorView& op, const TensorView& tensor, const std::vector<int64_t>& coords) {
  std::vector<int64_t> s(tensor.map.size(), 0);
  for (size_t j = 0; j < tensor.map.size(); ++j)
    if (tensor.map[j] != kNotSplit) s[j] = coords[DimFromMapValue(tensor.map[j], op.device_matrix.size())];
  return s;
}

int64_t SliceIdOfIndex(const Shape& splits, const std::vector<int64_t>& slice) {
  int64_t id = 0;
  for (size_t j = 0; j < slice.size(); ++j) id = id * splits[j] + slice[j];
  return id;
}

int64_t SliceId(const OperatorView& op, const TensorView& tensor, const std::vector<int64_t>& coords) {
  return SliceIdOfIndex(SplitsOf(op, tensor), SliceIndex(op, tensor, coords));
}

std::string SliceRanges(const TensorView& tensor, const std::vector<int64_t>& slice) {
  std::string s = "[";
  for (size_t j = 0; j < slice.size(); ++j) {
    const int64_t size = j < tensor.slice.size() ? tensor.slice[j] : 1;
    s += fmt::format("{}{}:{}", j ? ", " : "", slice[j] * size, (slice[j] + 1) * size);
  }
  return s + "]";
}

int64_t GroupIdAlong(const Shape& device_matrix, const std::vector<int64_t>& coords, const std::vector<int>& dims) {
  int64_t id = 0;
  for (size_t i = 0; i < device_matrix.size(); ++i) {
    if (std::find(dims.begin(), dims.end(), static_cast<int>(i)) != dims.end()) continue;
    id = id * device_matrix[i] + coords[i];
  }
  return id;
}

std::string ShapeText(const Shape& shape) {
  std::string t = "[";
  for (size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + "]";
}

std::string RankList(const std::vector<int64_t>& ranks, size_t show) {
  std::string s;
  for (size_t i = 0; i < ranks.size() && i < show; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > show) s += fmt::format(", ... ({} devices)", ranks.size());
  return s;
}

}  // namespace shardlab::gui
