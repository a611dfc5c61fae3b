// The tensor-map view: the selected tensor drawn as blocks of its slices,
// readable at hundreds of slices. The last two split dimensions are a block's
// rows and columns; further split dimensions become small multiples (one
// labelled block per index), so a 4-D tensor split four ways is 256 slices in
// readable blocks, not hair-thin stripes. Each slice is coloured as its
// devices in the device-matrix view (palette.h, key above) and, where it fits,
// labelled with its index ranges and holders; above it, how each tensor
// dimension maps to a device-matrix dimension.
#pragma once

#include <QWidget>

#include "gui/layout_model.h"

namespace shardlab::gui {

class TensorMapView : public QWidget {
  Q_OBJECT

 public:
  explicit TensorMapView(QWidget* parent = nullptr);

  void SetLayouts(const RunLayouts* layouts);
  void Show(int op, int tensor);

  QString HeaderText() const;
  // Small multiples: one block per index of the leading split dimensions.
  int64_t Blocks() const;
  // Rows and columns of slices in a block.
  int64_t SliceRows() const;
  int64_t SliceCols() const;
  // The slice at (block, row, col): its index per tensor dimension.
  std::vector<int64_t> SliceAt(int64_t block, int64_t row, int64_t col) const;
  // The global ranks holding a slice.
  std::vector<int64_t> HoldersOf(const std::vector<int64_t>& slice) const;
  QString SliceLabel(int64_t block, int64_t row, int64_t col) const;
  QRectF SliceRect(int64_t block, int64_t row, int64_t col) const;
  // "dim 0 = 2 of 4": what a block stands for ("" for a single block).
  QString BlockLabel(int64_t block) const;
  QString ToolTipAt(QPoint p) const;
  QSize sizeHint() const override { return {900, 560}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  // A new font or style measures the frame again (its margins follow the text).
  void changeEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Frame {
    double key = 0, axis = 0, top = 0, left = 0;  // slice key, columns' name, the blocks' area
    int64_t block_rows = 1, block_cols = 1;       // how the blocks are arranged
    double block_w = 0, block_h = 0;              // one block, without its label
    double label = 0;                             // a block's label height (0 for one block)
  };
  Frame FrameOf() const;
  const OperatorView* op() const;
  const TensorView* tensor() const;

  const RunLayouts* layouts_ = nullptr;
  int op_ = -1, tensor_ = 0;
  Shape splits_;                               // of the shown tensor
  std::vector<int> block_dims_;                // split dimensions shown as small multiples
  int row_dim_ = -1, col_dim_ = -1;            // split dimensions across a block (-1: none)
  std::vector<std::vector<int64_t>> holders_;  // by slice id: the global ranks holding it
  mutable int frame_width_ = -1, frame_height_ = -1;
  mutable Frame frame_;
};

}  // namespace shardlab::gui
