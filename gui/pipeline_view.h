// The pipeline timeline view: one row per stage (compute passes on top,
// communication on its own track below), idle time between passes hatched
// as bubbles, the bubble share per stage and overall in the labels. Wheel
// zooms around the cursor, dragging pans, hovering a task shows its name and
// times.
#pragma once

#include <QWidget>

#include "gui/pipeline_timeline.h"

namespace shardlab::gui {

class PipelineView : public QWidget {
  Q_OBJECT

 public:
  explicit PipelineView(QWidget* parent = nullptr);

  void SetTimeline(PipelineTimeline timeline);
  const PipelineTimeline& timeline() const { return timeline_; }

  // The text of the header: step time and overall bubble share.
  QString HeaderText() const;
  QString StageLabel(size_t row) const;
  // The tooltip for a point of the widget ("" over nothing).
  QString ToolTipAt(QPoint p) const;
  // Where a span is drawn (for tests and hover).
  QRectF SpanRect(size_t row, const TimelineSpan& span, bool communication) const;

  QSize sizeHint() const override { return {1100, 120 + 60 * static_cast<int>(timeline_.stages.size())}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  double XOf(double seconds) const;
  double SecondsOf(double x) const;

  PipelineTimeline timeline_;
  double view_start_ = 0, view_end_ = 1;  // seconds shown
  QPoint drag_from_;
  double drag_start_ = 0;
};

}  // namespace shardlab::gui
