#include "gui/pipeline_view.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>

namespace shardlab::gui {
namespace {

constexpr double kLeft = 170, kRight = 20, kTop = 40, kRowHeight = 60, kComputeHeight = 30, kCommHeight = 14;

QColor ColorOf(const std::string& category) {
  if (category == "forward") return QColor(66, 133, 244);
  if (category == "backward") return QColor(52, 168, 83);
  if (category == "recompute") return QColor(251, 188, 5);
  if (category == "optimizer") return QColor(128, 128, 128);
  if (category == "gradient") return QColor(255, 128, 0);
  return QColor(160, 100, 200);
}

}  // namespace

PipelineView::PipelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(600, 200);
}

void PipelineView::SetTimeline(PipelineTimeline timeline) {
  timeline_ = std::move(timeline);
  view_start_ = 0;
  view_end_ = std::max(timeline_.step_seconds, 1e-9);
  updateGeometry();
  update();
}

QString PipelineView::HeaderText() const {
  return QString("step %1 s   pipeline bubbles %2% of the step (slowest stage)")
      .arg(timeline_.step_seconds, 0, 'g', 5)
      .arg(100 * timeline_.bubble_fraction, 0, 'f', 1);
}

QString PipelineView::StageLabel(size_t row) const {
  const StageRow& s = timeline_.stages[row];
  return QString("stage %1  bubble %2%").arg(s.stage).arg(100 * s.bubble_fraction, 0, 'f', 1);
}

double PipelineView::XOf(double seconds) const {
  return kLeft + (seconds - view_start_) / (view_end_ - view_start_) * (width() - kLeft - kRight);
}

double PipelineView::SecondsOf(double x) const {
  return view_start_ + (x - kLeft) / (width() - kLeft - kRight) * (view_end_ - view_start_);
}

QRectF PipelineView::SpanRect(size_t row, const TimelineSpan& span, bool communication) const {
  const double y = kTop + static_cast<double>(row) * kRowHeight + (communication ? kComputeHeight + 4 : 0);
  const double x0 = XOf(span.start), x1 = std::max(XOf(span.end), x0 + 1);
  return {x0, y, x1 - x0, communication ? kCommHeight : kComputeHeight};
}

void PipelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  p.setPen(Qt::black);
  p.drawText(QRectF(10, 8, width() - 20, 24), Qt::AlignLeft | Qt::AlignVCenter, HeaderText());
  p.setClipRect(QRectF(0, kTop - 4, width(), height()));
  for (size_t r = 0; r < timeline_.stages.size(); ++r) {
    const StageRow& s = timeline_.stages[r];
    p.setPen(Qt::black);
    p.drawText(QRectF(8, kTop + r * kRowHeight, kLeft - 12, kComputeHeight), Qt::AlignLeft | Qt::AlignVCenter,
               StageLabel(r));
    p.save();
    p.setClipRect(QRectF(kLeft, kTop - 4, width() - kLeft - kRight, height()));
    for (const TimelineSpan& b : s.bubbles)
      p.fillRect(SpanRect(r, b, false), QBrush(QColor(220, 60, 60), Qt::BDiagPattern));
    for (const TimelineSpan& c : s.compute) {
      const QRectF rect = SpanRect(r, c, false);
      p.fillRect(rect, ColorOf(c.category));
      if (rect.width() > 24) {
        p.setPen(Qt::white);
        p.drawText(rect, Qt::AlignCenter, QString::fromStdString(c.name));
      }
    }
    for (const TimelineSpan& c : s.communication) p.fillRect(SpanRect(r, c, true), ColorOf(c.category));
    p.restore();
  }
  // Time axis.
  p.setPen(QColor(90, 90, 90));
  const double y = kTop + timeline_.stages.size() * kRowHeight + 4;
  p.drawLine(QPointF(kLeft, y), QPointF(width() - kRight, y));
  for (int i = 0; i <= 5; ++i) {
    const double t = view_start_ + (view_end_ - view_start_) * i / 5;
    p.drawText(QPointF(XOf(t) - 20, y + 16), QString::number(t, 'g', 4) + " s");
  }
}

void PipelineView::wheelEvent(QWheelEvent* event) {
  const double at = SecondsOf(event->position().x());
  const double factor = event->angleDelta().y() > 0 ? 0.8 : 1.25;
  view_start_ = at - (at - view_start_) * factor;
  view_end_ = at + (view_end_ - at) * factor;
  update();
}

void PipelineView::mousePressEvent(QMouseEvent* event) {
  drag_from_ = event->pos();
  drag_start_ = view_start_;
}

void PipelineView::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton)) return;
  const double shift = SecondsOf(event->pos().x()) - SecondsOf(drag_from_.x());
  const double span = view_end_ - view_start_;
  view_start_ = drag_start_ - shift;
  view_end_ = view_start_ + span;
  update();
}

QString PipelineView::ToolTipAt(QPoint pos) const {
  for (size_t r = 0; r < timeline_.stages.size(); ++r) {
    const StageRow& s = timeline_.stages[r];
    for (bool comm : {false, true})
      for (const TimelineSpan& span : comm ? s.communication : s.compute)
        if (SpanRect(r, span, comm).contains(pos))
          return QString("stage %1: %2 (%3)\n%4 s .. %5 s (%6 s)")
              .arg(s.stage)
              .arg(QString::fromStdString(span.name), QString::fromStdString(span.category))
              .arg(span.start, 0, 'g', 6)
              .arg(span.end, 0, 'g', 6)
              .arg(span.end - span.start, 0, 'g', 4);
    for (const TimelineSpan& b : s.bubbles)
      if (SpanRect(r, b, false).contains(pos))
        return QString("stage %1: bubble of %2 s").arg(s.stage).arg(b.end - b.start, 0, 'g', 4);
  }
  return {};
}

bool PipelineView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QString text = ToolTipAt(help->pos());
    if (text.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), text, this);
    return true;
  }
  return QWidget::event(e);
}

}  // namespace shardlab::gui
