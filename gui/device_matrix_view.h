// The device-matrix view: the devices of the selected operator's stage laid
// out by its device matrix (DeviceGrid: dimensions beyond two as labelled
// nested tiles) filling the view, rows and columns labelled with the
// device-matrix dimension they stand for, coloured by the slice of the
// selected tensor each holds (palette.h, with its key above the grid);
// replication or communication groups outlined on demand; hover shows rank,
// coordinates, server and the slice's index ranges. When cells would be
// smaller than a few pixels (thousands of devices) blocks of devices are
// drawn as one cell; the wheel zooms in to see single devices, dragging pans.
#pragma once

#include <QWidget>

#include "gui/chart_parts.h"
#include "gui/layout_model.h"

namespace shardlab::gui {

class DeviceMatrixView : public QWidget {
  Q_OBJECT

 public:
  explicit DeviceMatrixView(QWidget* parent = nullptr);

  // `layouts` must outlive the view's use of it (the main window owns it).
  void SetLayouts(const RunLayouts* layouts);
  void Show(int op, int tensor);
  // -1 none, 0 devices holding the same slice, k >= 1 the operator's k-th communication group.
  void SetOutline(int outline);
  void SetZoom(double zoom);

  const OperatorView* op() const;
  const TensorView* tensor() const;
  QString HeaderText() const;
  // The line under the grid: how many devices a cell stands for, or what clicking does.
  QString NoteText() const;
  // Cells drawn: one per device, or per block of devices when aggregated.
  int64_t CellCount() const;
  int64_t BlockSize() const;  // devices per cell side (1: not aggregated)
  // Where the device at stage position `local` is drawn.
  QRectF CellRect(int64_t local) const;
  QString ToolTipAt(QPoint p) const;
  QSize sizeHint() const override { return {900, 640}; }

 signals:
  void deviceFocused(qint64 rank);

 protected:
  void paintEvent(QPaintEvent* event) override;
  // A new font or style measures the frame again (its margins follow the text).
  void changeEvent(QEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  // Where the parts above and beside the grid end (they depend on the width and the choice, not the zoom).
  struct Frame {
    double key = 0, legend = 0, column_name = 0;  // tops of the slice key, the outline legend, the columns' name
    double top = 0, left = 0, bottom = 0;         // the grid's area
  };
  struct Geometry {
    double cell_w = 0, cell_h = 0;  // pixels per device
    double tile_w = 0, tile_h = 0, x0 = 0, y0 = 0;
    double label = 0;  // a tile's label above it (0 for a single tile)
    int64_t block = 1;
  };
  Frame FrameOf() const;
  Geometry Layout() const;
  std::vector<LegendItem> LegendItems() const;
  int64_t LocalAt(QPoint p) const;  // -1 for none
  int64_t SliceIdOf(int64_t local) const { return slice_ids_[local]; }
  int64_t OutlineGroupOf(int64_t local) const { return group_ids_[local]; }
  // Per device: its slice of the shown tensor and its outline group (computed once per choice).
  void ComputeIds();

  const RunLayouts* layouts_ = nullptr;
  int op_ = -1, tensor_ = 0, outline_ = -1;
  std::unique_ptr<DeviceGrid> grid_;
  double zoom_ = 1;
  QPointF pan_;
  QPoint drag_from_;
  QPointF drag_pan_;
  int64_t focus_ = -1;
  std::vector<int64_t> slice_ids_, group_ids_;
  std::vector<QColor> colors_;    // per device: its slice's colour
  mutable int frame_width_ = -1;  // the width frame_ was measured at
  mutable Frame frame_;
};

}  // namespace shardlab::gui
