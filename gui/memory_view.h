// The memory view: one stacked bar per pipeline stage with what a device of
// that stage holds at its peak (parameters, optimizer states, gradients,
// activations, communication buffers) against the device's memory, drawn as
// the out-of-memory line. Where the stack frees activations as it makes the
// gradients (one micro-batch without a kept gradient buffer), the two stand
// side by side at the height of the larger, as the peak counts them (with
// MindSpore's gathered weights, which the backward frees too). Hover a bar
// for its figures.
#pragma once

#include <QWidget>
#include <vector>

#include "core/report/step_result.h"
#include "gui/palette.h"

namespace shardlab::gui {

class MemoryView : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryView(QWidget* parent = nullptr);

  // `capacity`: the device's memory in bytes (0: unknown, no line).
  void SetResult(const StepResult& result, double capacity);

  QString HeaderText() const;
  size_t Bars() const { return stages_.size(); }
  // Where a part of stage bar `bar` is drawn (empty when the part is zero).
  QRectF PartRect(size_t bar, MemoryPart part) const;
  // The y of `bytes` on the axis.
  double YOf(double bytes) const;
  // Whether gradients and what the backward frees stand side by side in bar `bar`.
  bool PeakApart(size_t bar) const;
  QString ToolTipAt(QPoint p) const;
  QSize sizeHint() const override { return {900, 560}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  // A new font or style measures the frame again (its margins follow the text).
  void changeEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Frame {
    double legend = 0, top = 0, bottom = 0, left = 0, right = 0;
  };
  Frame FrameOf() const;
  double AxisMax() const;

  std::vector<StageResult> stages_;
  double capacity_ = 0;
  mutable int frame_width_ = -1, frame_height_ = -1;
  mutable Frame frame_;
};

}  // namespace shardlab::gui
