// The pipeline timeline view: one row per stage (compute passes on top,
// communication and pipeline transfers on their own tracks below), idle time
// between passes hatched as bubbles, the bubble share per stage and overall in
// the labels, gradient buckets' starts marked on the backward passes, a legend
// of every colour and a time axis in scaled units. Clicking a stage's label
// expands it into its traced devices (results traced per device); clicking
// inside a pass selects the operator whose task runs there. Wheel zooms
// around the cursor, dragging pans, hovering shows names and times.
#pragma once

#include <QWidget>

#include "gui/pipeline_timeline.h"

namespace shardlab::gui {

// The tracks of a row, top to bottom.
enum class Track {
  kCompute,        // forward and backward passes, the optimizer
  kCommunication,  // weight gathers and gradient collectives
  kTransfers,      // activations and gradients sent to the neighbouring stages
};

class PipelineView : public QWidget {
  Q_OBJECT

 public:
  explicit PipelineView(QWidget* parent = nullptr);

  void SetTimeline(PipelineTimeline timeline);
  const PipelineTimeline& timeline() const { return timeline_; }

  // The text of the header: step time and overall bubble share.
  QString HeaderText() const;
  QString StageLabel(size_t stage_row) const;
  // The tooltip for a point of the widget ("" over nothing).
  QString ToolTipAt(QPoint p) const;
  // Where a span of visual row `row` is drawn (rows: stages, and the devices of expanded stages).
  QRectF SpanRect(size_t row, const TimelineSpan& span, Track track) const;
  // The y of the first row: below the header and the legend at the current width.
  double RowsTop() const;
  // Where the time axis' labels start and end (for overlap checks).
  double AxisY() const;
  // The operator whose task runs at this point of a pass, -1 for none.
  int OperatorAt(QPoint p) const;
  // Shows or hides a stage's device rows (when it has them).
  void SetExpanded(size_t stage_row, bool expanded);
  size_t VisualRows() const { return rows_.size(); }
  // Shows [start, end] seconds (the compare tab aligns two views with it).
  void SetVisibleRange(double start, double end);

  QSize sizeHint() const override;
  // Rows shrink to fit down to a minimum; below it the window scrolls the view.
  QSize minimumSizeHint() const override;
  // A row's height at the current size.
  double RowHeight() const;

 signals:
  void operatorClicked(int op);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct VisualRow {
    size_t stage = 0;
    int device = -1;  // index into StageRow::devices, -1 for the stage itself
  };
  double RowsTopAt(int width) const;
  double AxisSpace() const;  // the axis' ticks, labels and name
  double XOf(double seconds) const;
  double SecondsOf(double x) const;
  void Relayout();
  const std::vector<TimelineSpan>& Spans(const VisualRow& r, Track track) const;
  // The pass span under a point, and its visual row.
  const TimelineSpan* PassAt(QPoint p, size_t* row) const;

  PipelineTimeline timeline_;
  std::vector<VisualRow> rows_;
  std::vector<bool> expanded_;
  double view_start_ = 0, view_end_ = 1;  // seconds shown
  QPoint drag_from_;
  double drag_start_ = 0;
  mutable int rows_top_width_ = -1;  // the width RowsTop() was measured at
  mutable double rows_top_ = 0;
};

}  // namespace shardlab::gui
