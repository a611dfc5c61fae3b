#include "gui/pipeline_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>

#include "gui/tooltip.h"

namespace shardlab::gui {
namespace {

constexpr double kLeft = 170, kRight = 20, kTop = 40, kRowHeight = 60, kComputeHeight = 30, kCommHeight = 14;

QColor ColorOf(EventKind kind) {
  if (kind == EventKind::kForward) return QColor(66, 133, 244);
  if (kind == EventKind::kBackward) return QColor(52, 168, 83);
  if (kind == EventKind::kOptimizer) return QColor(128, 128, 128);
  if (kind == EventKind::kGradient) return QColor(255, 128, 0);
  return QColor(160, 100, 200);
}

}  // namespace

PipelineView::PipelineView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(600, 200);
}

void PipelineView::SetTimeline(PipelineTimeline timeline) {
  timeline_ = std::move(timeline);
  expanded_.assign(timeline_.stages.size(), false);
  view_start_ = 0;
  view_end_ = std::max(timeline_.step_seconds, 1e-9);
  Relayout();
}

void PipelineView::SetVisibleRange(double start, double end) {
  view_start_ = start;
  view_end_ = std::max(end, start + 1e-12);
  update();
}

void PipelineView::Relayout() {
  rows_.clear();
  for (size_t s = 0; s < timeline_.stages.size(); ++s) {
    rows_.push_back({s, -1});
    if (expanded_[s])
      for (size_t d = 0; d < timeline_.stages[s].devices.size(); ++d) rows_.push_back({s, static_cast<int>(d)});
  }
  updateGeometry();
  update();
}

void PipelineView::SetExpanded(size_t stage_row, bool expanded) {
  if (stage_row >= expanded_.size()) return;
  expanded_[stage_row] = expanded && !timeline_.stages[stage_row].devices.empty();
  Relayout();
}

const std::vector<TimelineSpan>& PipelineView::Spans(const VisualRow& r, bool communication) const {
  const StageRow& s = timeline_.stages[r.stage];
  if (r.device < 0) return communication ? s.communication : s.compute;
  const DeviceRow& d = s.devices[r.device];
  return communication ? d.communication : d.compute;
}

QString PipelineView::HeaderText() const {
  return QString("step %1 s   pipeline bubbles %2% of the step (slowest stage)")
      .arg(timeline_.step_seconds, 0, 'g', 5)
      .arg(100 * timeline_.bubble_fraction, 0, 'f', 1);
}

QString PipelineView::StageLabel(size_t stage_row) const {
  const StageRow& s = timeline_.stages[stage_row];
  const QString marker = s.devices.empty() ? "" : (expanded_[stage_row] ? "- " : "+ ");
  return QString("%1stage %2  bubble %3%").arg(marker).arg(s.stage).arg(100 * s.bubble_fraction, 0, 'f', 1);
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
  for (size_t r = 0; r < rows_.size(); ++r) {
    const VisualRow& row = rows_[r];
    const StageRow& s = timeline_.stages[row.stage];
    p.setPen(Qt::black);
    const QString label = row.device < 0 ? StageLabel(row.stage)
                                         : "    " + QString::fromStdString(s.devices[row.device].label);
    p.drawText(QRectF(8, kTop + r * kRowHeight, kLeft - 12, kComputeHeight), Qt::AlignLeft | Qt::AlignVCenter, label);
    p.save();
    p.setClipRect(QRectF(kLeft, kTop - 4, width() - kLeft - kRight, height()));
    if (row.device < 0)
      for (const TimelineSpan& b : s.bubbles)
        p.fillRect(SpanRect(r, b, false), QBrush(QColor(220, 60, 60), Qt::BDiagPattern));
    for (const TimelineSpan& c : Spans(row, false)) {
      const QRectF rect = SpanRect(r, c, false);
      p.fillRect(rect, ColorOf(c.kind));
      if (rect.width() > 24) {
        p.setPen(Qt::white);
        p.drawText(rect, Qt::AlignCenter, QString::fromStdString(c.name));
      }
    }
    for (const TimelineSpan& c : Spans(row, true)) {
      p.fillRect(SpanRect(r, c, true), ColorOf(c.kind));
      if (c.kind == EventKind::kGradient) {
        // A bucket starts where its gradients are ready: marked on the backward pass above.
        const double x = XOf(c.start), y = SpanRect(r, c, false).bottom();
        const QPointF tip[3] = {{x, y - 7}, {x - 4, y}, {x + 4, y}};
        p.setPen(Qt::NoPen);
        p.setBrush(ColorOf(EventKind::kGradient));
        p.drawPolygon(tip, 3);
        p.setBrush(Qt::NoBrush);
      }
    }
    p.restore();
  }
  // Time axis.
  p.setPen(QColor(90, 90, 90));
  const double y = kTop + rows_.size() * kRowHeight + 4;
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
  const QPoint pos = event->pos();
  const double row = (pos.y() - kTop) / kRowHeight;
  if (pos.x() < kLeft && row >= 0 && row < static_cast<double>(rows_.size())) {
    const VisualRow& r = rows_[static_cast<size_t>(row)];
    if (r.device < 0) SetExpanded(r.stage, !expanded_[r.stage]);
    return;
  }
  const int op = OperatorAt(pos);
  if (op >= 0) emit operatorClicked(op);
}

const TimelineSpan* PipelineView::PassAt(QPoint pos, size_t* row) const {
  for (size_t r = 0; r < rows_.size(); ++r)
    for (const TimelineSpan& span : Spans(rows_[r], false))
      if (span.IsPass() && SpanRect(r, span, false).contains(pos)) {
        *row = r;
        return &span;
      }
  return nullptr;
}

int PipelineView::OperatorAt(QPoint pos) const {
  size_t r = 0;
  const TimelineSpan* pass = PassAt(pos, &r);
  if (!pass) return -1;
  const StageRow& s = timeline_.stages[rows_[r].stage];
  const QRectF rect = SpanRect(r, *pass, false);
  const double share = (pos.x() - rect.left()) / std::max(rect.width(), 1e-9);
  for (const PassTask& t : pass->kind == EventKind::kForward ? s.forward_tasks : s.backward_tasks)
    if (share >= t.begin && share < t.end) return t.op;
  return -1;
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
  for (size_t r = 0; r < rows_.size(); ++r) {
    const StageRow& s = timeline_.stages[rows_[r].stage];
    for (bool comm : {false, true})
      for (const TimelineSpan& span : Spans(rows_[r], comm))
        if (SpanRect(r, span, comm).contains(pos)) {
          QString text = QString("stage %1: %2 (%3)\n%4 s .. %5 s (%6 s)")
                             .arg(s.stage)
                             .arg(QString::fromStdString(span.name), QString(ToString(span.kind)))
                             .arg(span.start, 0, 'g', 6)
                             .arg(span.end, 0, 'g', 6)
                             .arg(span.end - span.start, 0, 'g', 4);
          if (!comm && span.IsPass()) {
            const QRectF rect = SpanRect(r, span, false);
            const double share = (pos.x() - rect.left()) / std::max(rect.width(), 1e-9);
            for (const PassTask& t : span.kind == EventKind::kForward ? s.forward_tasks : s.backward_tasks)
              if (share >= t.begin && share < t.end)
                text += QString("\ntask %1 (click to select its operator)").arg(QString::fromStdString(t.name));
          }
          return text;
        }
    if (rows_[r].device < 0)
      for (const TimelineSpan& b : s.bubbles)
        if (SpanRect(r, b, false).contains(pos))
          return QString("stage %1: bubble of %2 s").arg(s.stage).arg(b.end - b.start, 0, 'g', 4);
  }
  return {};
}

bool PipelineView::event(QEvent* e) {
  return ShowToolTip(this, e, [this](QPoint p) { return ToolTipAt(p); }) || QWidget::event(e);
}

}  // namespace shardlab::gui
