// The tensor-map view: the selected tensor's shape drawn as a block split
// into its slices (leading dimensions down, the last across), each slice
// coloured as in the device-matrix view and labelled with its index ranges
// and the devices that hold it; above it, how each tensor dimension maps to
// a device-matrix dimension.
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
  int64_t SliceRows() const;
  int64_t SliceCols() const;
  // Slice (row, col) of the drawing: its index per tensor dimension (its id is row * SliceCols() + col).
  std::vector<int64_t> SliceAt(int64_t row, int64_t col) const;
  // The global ranks holding a slice.
  std::vector<int64_t> HoldersOf(const std::vector<int64_t>& slice) const;
  QString SliceLabel(int64_t row, int64_t col) const;
  QRectF SliceRect(int64_t row, int64_t col) const;
  QString ToolTipAt(QPoint p) const;
  QSize sizeHint() const override { return {900, 560}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  const OperatorView* op() const;
  const TensorView* tensor() const;

  const RunLayouts* layouts_ = nullptr;
  int op_ = -1, tensor_ = 0;
  Shape splits_;                              // of the shown tensor
  std::vector<std::vector<int64_t>> holders_;  // by slice id: the global ranks holding it
};

}  // namespace shardlab::gui
