#include "gui/pipeline_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>

#include "gui/chart_parts.h"
#include "gui/palette.h"
#include "gui/tooltip.h"

namespace shardlab::gui {
namespace {

// Label column, right margin; a row's height at its largest and smallest
// (rows shrink to fit the view's height, then the view asks for scrolling);
// the tracks' shares of a row.
constexpr double kLeft = 170, kRight = 24, kRowHeight = 64, kMinRowHeight = 28;
constexpr double kComputeShare = 30.0 / 64, kCommShare = 12.0 / 64, kTransferShare = 7.0 / 64, kGapShare = 3.0 / 64;

constexpr Track kTracks[] = {Track::kCompute, Track::kCommunication, Track::kTransfers};

// The legend; the weight-gradient pass only on timelines of a schedule that splits the backward.
std::vector<LegendItem> Legend(const PipelineTimeline& timeline) {
  std::vector<LegendItem> items = {
      {"forward pass", KindColor(EventKind::kForward)},
      {"backward pass", KindColor(EventKind::kBackward)},
      {"bubble (idle compute)", BubbleColor(), LegendMark::kHatch},
      {"weight gather", KindColor(EventKind::kWeightGather)},
      {"gradient collective", KindColor(EventKind::kGradient)},
      {"gradient bucket starts", KindColor(EventKind::kGradient), LegendMark::kTriangle},
      {"pipeline send", KindColor(EventKind::kSend)},
      {"optimizer update", KindColor(EventKind::kOptimizer)},
  };
  const bool split = std::any_of(timeline.stages.begin(), timeline.stages.end(), [](const StageRow& s) {
    return std::any_of(s.compute.begin(), s.compute.end(),
                       [](const TimelineSpan& span) { return span.kind == EventKind::kWeightGradient; });
  });
  if (split) items.insert(items.begin() + 2, {"weight-gradient pass", KindColor(EventKind::kWeightGradient)});
  return items;
}

QString Time(double seconds) { return FormatValue(seconds, AxisUnit::kSeconds, 4); }

}  // namespace

PipelineView::PipelineView(QWidget* parent) : QWidget(parent) { setMouseTracking(true); }

void PipelineView::SetTimeline(PipelineTimeline timeline) {
  timeline_ = std::move(timeline);
  rows_top_width_ = -1;
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

const std::vector<TimelineSpan>& PipelineView::Spans(const VisualRow& r, Track track) const {
  const StageRow& s = timeline_.stages[r.stage];
  if (r.device < 0)
    return track == Track::kCompute ? s.compute : track == Track::kCommunication ? s.communication : s.transfers;
  const DeviceRow& d = s.devices[r.device];
  return track == Track::kCompute ? d.compute : track == Track::kCommunication ? d.communication : d.transfers;
}

double PipelineView::RowsTopAt(int width) const {
  const QFontMetrics m = fontMetrics();
  const double header = 8 + HeaderHeight(m, width - 20, HeaderText());
  return DrawLegend(nullptr, m, QRectF(10, header + 6, width - 20, 0), Legend(timeline_)) + 14;
}

double PipelineView::RowsTop() const {
  if (rows_top_width_ != width()) {  // measured once per width: every span's rectangle needs it
    rows_top_ = RowsTopAt(width());
    rows_top_width_ = width();
  }
  return rows_top_;
}

double PipelineView::AxisSpace() const { return 2.0 * fontMetrics().height() + 16; }

double PipelineView::RowHeight() const {
  const double fit = (height() - RowsTop() - AxisSpace()) / static_cast<double>(std::max<size_t>(rows_.size(), 1));
  return std::clamp(fit, kMinRowHeight, kRowHeight);
}

double PipelineView::AxisY() const { return RowsTop() + static_cast<double>(rows_.size()) * RowHeight() + 2; }

QSize PipelineView::minimumSizeHint() const {
  return {600, static_cast<int>(RowsTopAt(600) + static_cast<double>(rows_.size()) * kMinRowHeight + AxisSpace())};
}

QSize PipelineView::sizeHint() const {
  constexpr int kWidth = 1100;
  const double axis = RowsTopAt(kWidth) + static_cast<double>(rows_.size()) * kRowHeight + 2;
  return {kWidth, static_cast<int>(axis + AxisSpace())};
}

QString PipelineView::HeaderText() const {
  return QString("step %1   pipeline bubbles %2% of the step (slowest stage)")
      .arg(Time(timeline_.step_seconds))
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

QRectF PipelineView::SpanRect(size_t row, const TimelineSpan& span, Track track) const {
  const double row_h = RowHeight();
  double y = RowsTop() + static_cast<double>(row) * row_h, h = kComputeShare * row_h;
  if (track != Track::kCompute) {
    y += (kComputeShare + kGapShare) * row_h;
    h = kCommShare * row_h;
  }
  if (track == Track::kTransfers) {
    y += (kCommShare + kGapShare) * row_h;
    h = kTransferShare * row_h;
  }
  const double x0 = XOf(span.start), x1 = std::max(XOf(span.end), x0 + 1);
  return {x0, y, x1 - x0, h};
}

void PipelineView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const double header = DrawHeader(p, QRectF(10, 8, width() - 20, 0), HeaderText());
  DrawLegend(&p, p.fontMetrics(), QRectF(10, header + 6, width() - 20, 0), Legend(timeline_));
  const double top = RowsTop();
  p.setClipRect(QRectF(0, top - 4, width(), height()));
  for (size_t r = 0; r < rows_.size(); ++r) {
    const VisualRow& row = rows_[r];
    const StageRow& s = timeline_.stages[row.stage];
    p.setPen(Qt::black);
    const QString label =
        row.device < 0 ? StageLabel(row.stage) : "    " + QString::fromStdString(s.devices[row.device].label);
    p.drawText(QRectF(8, top + static_cast<double>(r) * RowHeight(), kLeft - 12, kComputeShare * RowHeight()),
               Qt::AlignLeft | Qt::AlignVCenter, label);
    p.save();
    p.setClipRect(QRectF(kLeft, top - 4, width() - kLeft - kRight, height()));
    if (row.device < 0)
      for (const TimelineSpan& b : s.bubbles)
        p.fillRect(SpanRect(r, b, Track::kCompute), QBrush(BubbleColor(), Qt::BDiagPattern));
    for (const TimelineSpan& c : Spans(row, Track::kCompute)) {
      const QRectF rect = SpanRect(r, c, Track::kCompute);
      p.fillRect(rect, KindColor(c.kind));
      if (rect.width() > 24) {
        p.setPen(TextOn(KindColor(c.kind)));
        p.drawText(rect, Qt::AlignCenter, QString::fromStdString(c.name));
      }
    }
    for (const TimelineSpan& c : Spans(row, Track::kTransfers))
      p.fillRect(SpanRect(r, c, Track::kTransfers), KindColor(c.kind));
    for (const TimelineSpan& c : Spans(row, Track::kCommunication)) {
      p.fillRect(SpanRect(r, c, Track::kCommunication), KindColor(c.kind));
      if (c.kind == EventKind::kGradient) {
        // A bucket starts where its gradients are ready: marked on the backward pass above.
        const double x = XOf(c.start), y = SpanRect(r, c, Track::kCompute).bottom();
        const QPointF tip[3] = {{x, y - 7}, {x - 4, y}, {x + 4, y}};
        p.setPen(Qt::NoPen);
        p.setBrush(KindColor(EventKind::kGradient));
        p.drawPolygon(tip, 3);
        p.setBrush(Qt::NoBrush);
      }
    }
    p.restore();
  }
  DrawHorizontalAxis(p, AxisY(), kLeft, width() - kRight, view_start_, view_end_, AxisUnit::kSeconds,
                     "time since the step started");
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
  const double row = (pos.y() - RowsTop()) / RowHeight();
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
    for (const TimelineSpan& span : Spans(rows_[r], Track::kCompute))
      if (span.IsPass() && SpanRect(r, span, Track::kCompute).contains(pos)) {
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
  const QRectF rect = SpanRect(r, *pass, Track::kCompute);
  const PassTask* task = s.TaskAt(*pass, (pos.x() - rect.left()) / std::max(rect.width(), 1e-9));
  return task ? task->op : -1;
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
    for (Track track : kTracks)
      for (const TimelineSpan& span : Spans(rows_[r], track))
        if (SpanRect(r, span, track).contains(pos)) {
          QString text = QString("stage %1: %2 (%3)\n%4 .. %5 (%6)")
                             .arg(s.stage)
                             .arg(QString::fromStdString(span.name), QString(ToString(span.kind)))
                             .arg(Time(span.start), Time(span.end), Time(span.end - span.start));
          if (track == Track::kCompute && span.IsPass()) {
            const QRectF rect = SpanRect(r, span, Track::kCompute);
            if (const PassTask* t = s.TaskAt(span, (pos.x() - rect.left()) / std::max(rect.width(), 1e-9)))
              text += QString("\ntask %1 (click to select its operator)").arg(QString::fromStdString(t->name));
          }
          return text;
        }
    if (rows_[r].device < 0)
      for (const TimelineSpan& b : s.bubbles)
        if (SpanRect(r, b, Track::kCompute).contains(pos))
          return QString("stage %1: bubble of %2").arg(s.stage).arg(Time(b.end - b.start));
  }
  return {};
}

bool PipelineView::event(QEvent* e) {
  return ShowToolTip(this, e, [this](QPoint p) { return ToolTipAt(p); }) || QWidget::event(e);
}

}  // namespace shardlab::gui
