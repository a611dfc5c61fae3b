// What the device-matrix and tensor-map views draw, free of Qt: each
// operator's device matrix and the layouts of its tensors, where every device
// of the stage sits in a folded grid (dimensions beyond two become nested
// tiles), which slice of a tensor each device holds, and the groups the views
// outline (devices holding the same slice, communication groups).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/run_config.h"
#include "core/graph/graph.h"
#include "core/layout/tensor_map.h"
#include "core/ops/op_layout.h"
#include "core/plan/rank_placement.h"

namespace shardlab::gui {

struct TensorView {
  std::string name;
  std::string role;  // "input 0", "output 0"
  Shape shape;       // full (one micro-batch)
  TensorMap map;     // MindSpore's convention: device dimension counted from the right
  Shape slice;       // per device
};

struct CommGroupView {
  std::string label;      // "forward AllReduce over dim 1"
  std::vector<int> dims;  // device-matrix dimensions (0 = first) the group spans
};

struct OperatorView {
  int index = 0;
  std::string name, type;
  int64_t stage = 0;
  RankPlacement placement;  // the run's: where the stage's devices sit among the global ranks
  Shape device_matrix;
  std::vector<TensorView> tensors;
  std::vector<CommGroupView> groups;

  // The global rank of the stage's device `local`.
  int64_t Rank(int64_t local) const { return placement.Rank(stage, local); }
};

struct RunLayouts {
  int64_t devices_per_stage = 1;
  int64_t devices_per_server = 1;
  std::vector<OperatorView> ops;
};

RunLayouts BuildRunLayouts(const RunSpec& run, const Graph& graph, const std::vector<OpLayout>& layouts);

// The tensor of `op` the views show first: the one split along the most device dimensions.
int DefaultTensor(const OperatorView& op);

// The operator the views show first: the first MatMul whose strategy splits
// something, else the first operator with a device matrix of several dims, else 0.
int DefaultOperator(const RunLayouts& layouts);

// The device matrix folded onto a plane: the last two dimensions (after
// dropping dimensions of size 1) are a tile's rows and columns, the leading
// ones arrange the tiles (even positions down, odd ones across); a single
// dimension wraps into a near-square tile.
class DeviceGrid {
 public:
  explicit DeviceGrid(const Shape& device_matrix);

  int64_t devices() const { return devices_; }
  int64_t tile_rows() const { return tile_rows_; }
  int64_t tile_cols() const { return tile_cols_; }
  int64_t cell_rows() const { return cell_rows_; }  // per tile
  int64_t cell_cols() const { return cell_cols_; }

  struct Place {
    int64_t tile_row = 0, tile_col = 0, row = 0, col = 0;
  };
  // Where the device at position `local` of the stage (row-major coordinates) sits.
  Place PlaceOf(int64_t local) const;
  // The device at a place, -1 for none.
  int64_t DeviceAt(const Place& p) const;
  // "d0=1 d2=0": the leading coordinates a tile stands for ("" when one tile).
  std::string TileLabel(int64_t tile_row, int64_t tile_col) const;
  // What a tile's rows and columns stand for: "d0 (32)"; a single dimension
  // wrapped over rows reads "d0 (4096), 64 per row"; "" for none.
  std::string RowAxisName() const;
  std::string ColumnAxisName() const;
  // The coordinate a tile's row or column index stands for (-1 when wrapped or none).
  int row_dim() const { return wrapped_ ? -1 : row_dim_; }
  int col_dim() const { return wrapped_ ? -1 : col_dim_; }
  std::vector<int64_t> Coordinates(int64_t local) const;

 private:
  Place ComputePlace(int64_t local) const;
  std::vector<Place> places_;        // by device
  std::vector<int64_t> local_at_;    // by (tile row, tile col, row, col), row-major
  Shape dims_;                       // the device matrix
  std::vector<int> shown_;           // dimensions of size > 1, in order
  std::vector<int> down_, across_;   // tile dimensions
  int row_dim_ = -1, col_dim_ = -1;  // within a tile; -1: none (size 1)
  bool wrapped_ = false;             // a single dimension wrapped over rows
  int64_t devices_ = 1, tile_rows_ = 1, tile_cols_ = 1, cell_rows_ = 1, cell_cols_ = 1;
};

// The slice of `tensor` a device with these coordinates holds: one index per
// tensor dimension (0 where the dimension is not split).
std::vector<int64_t> SliceIndex(const OperatorView& op, const TensorView& tensor, const std::vector<int64_t>& coords);
// One number per distinct slice (row-major over the tensor's splits).
int64_t SliceId(const OperatorView& op, const TensorView& tensor, const std::vector<int64_t>& coords);
int64_t SliceIdOfIndex(const Shape& splits, const std::vector<int64_t>& slice);
// How many ways each tensor dimension is split.
Shape SplitsOf(const OperatorView& op, const TensorView& tensor);
// "[0:512, 256:512]": the element ranges of a slice.
std::string SliceRanges(const TensorView& tensor, const std::vector<int64_t>& slice);
// Group id of a device for an outline: the coordinates off `dims` (devices
// differing only along `dims` share it).
int64_t GroupIdAlong(const Shape& device_matrix, const std::vector<int64_t>& coords, const std::vector<int>& dims);
// "[32, 1, 8]".
std::string ShapeText(const Shape& shape);
// "0, 8, 16, ... (32 devices)": ranks, shortened.
std::string RankList(const std::vector<int64_t>& ranks, size_t show = 6);

}  // namespace shardlab::gui
