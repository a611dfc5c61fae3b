#include "gui/memory_view.h"

#include <QEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gui/chart_parts.h"
#include "gui/tooltip.h"

namespace shardlab::gui {
namespace {

constexpr double kMargin = 10;
constexpr MemoryPart kStacked[] = {MemoryPart::kParameters, MemoryPart::kGatheredWeights, MemoryPart::kOptimizerStates,
                                   MemoryPart::kGradients,  MemoryPart::kActivations,     MemoryPart::kBuffers};

const char* NameOf(MemoryPart part) {
  switch (part) {
    case MemoryPart::kParameters:
      return "parameters";
    case MemoryPart::kGatheredWeights:
      return "gathered weights";
    case MemoryPart::kOptimizerStates:
      return "optimizer states";
    case MemoryPart::kGradients:
      return "gradients";
    case MemoryPart::kActivations:
      return "activations";
    case MemoryPart::kBuffers:
      return "communication buffers";
  }
  return "";
}

double BytesOf(const MemoryBreakdown& m, MemoryPart part) {
  switch (part) {
    case MemoryPart::kParameters:
      return m.parameters - m.gathered_weights;
    case MemoryPart::kGatheredWeights:
      return m.gathered_weights;
    case MemoryPart::kOptimizerStates:
      return m.optimizer_states;
    case MemoryPart::kGradients:
      return m.gradients;
    case MemoryPart::kActivations:
      return m.activations;
    case MemoryPart::kBuffers:
      return m.communication_buffers;
  }
  return 0;
}

QString Bytes(double bytes) { return FormatValue(bytes, AxisUnit::kBytes, 3); }

QColor CapacityColor() { return {200, 30, 30}; }

// The parts' legend; gathered weights only where some stage has them.
std::vector<LegendItem> Legend(const std::vector<StageResult>& stages) {
  const bool gathered =
      std::any_of(stages.begin(), stages.end(), [](const StageResult& s) { return s.memory.gathered_weights > 0; });
  std::vector<LegendItem> items;
  for (MemoryPart part : kStacked)
    if (part != MemoryPart::kGatheredWeights || gathered) items.push_back({NameOf(part), MemoryColor(part)});
  items.push_back({"device memory", CapacityColor(), LegendMark::kDashed});
  return items;
}

}  // namespace

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(400, 300);
}

void MemoryView::SetResult(const StepResult& result, double capacity) {
  stages_ = result.stages;
  capacity_ = capacity;
  frame_width_ = -1;
  update();
}

bool MemoryView::PeakApart(size_t bar) const {
  const MemoryBreakdown& m = stages_[bar].memory;
  const double sum = m.parameters + m.optimizer_states + m.gradients + m.activations + m.communication_buffers;
  const double freed = std::min(m.gradients, m.gathered_weights + m.activations);
  return freed > 0 && m.peak < sum - 0.5 * freed;
}

QString MemoryView::HeaderText() const {
  if (stages_.empty()) return "no result";
  const auto peak = std::max_element(stages_.begin(), stages_.end(), [](const StageResult& a, const StageResult& b) {
    return a.memory.peak < b.memory.peak;
  });
  QString text = QString("peak memory per device: %1 on stage %2").arg(Bytes(peak->memory.peak)).arg(peak->stage);
  if (capacity_ > 0) {
    text += QString(" of %1 (%2%)").arg(Bytes(capacity_)).arg(100 * peak->memory.peak / capacity_, 0, 'f', 1);
    if (peak->memory.peak > capacity_)
      text += QString(": out of memory by %1").arg(Bytes(peak->memory.peak - capacity_));
  }
  return text;
}

MemoryView::Frame MemoryView::FrameOf() const {
  if (frame_width_ == width() && frame_height_ == height()) return frame_;
  const QFontMetrics m = fontMetrics();
  Frame f;
  f.legend = kMargin + HeaderHeight(m, width() - 2 * kMargin, HeaderText()) + 6;
  f.top = DrawLegend(nullptr, m, QRectF(kMargin, f.legend, width() - 2 * kMargin, 0), Legend(stages_)) + 2 * m.height();
  f.left = kMargin + m.height() + 8 + m.horizontalAdvance("000.0 GiB");
  f.right = width() - kMargin - 8;
  f.bottom = height() - kMargin - 2 * m.height() - 10;  // the stages' labels and the axis name below
  frame_ = f;
  frame_width_ = width();
  frame_height_ = height();
  return f;
}

double MemoryView::AxisMax() const {
  double top = capacity_;
  for (const StageResult& s : stages_) top = std::max(top, s.memory.peak);
  return std::max(top * 1.08, 1.0);
}

double MemoryView::YOf(double bytes) const {
  const Frame f = FrameOf();
  return f.bottom - bytes / AxisMax() * (f.bottom - f.top);
}

QRectF MemoryView::PartRect(size_t bar, MemoryPart part) const {
  const Frame f = FrameOf();
  const double slot = (f.right - f.left) / static_cast<double>(std::max<size_t>(stages_.size(), 1));
  const double width = std::min(slot * 0.6, 120.0);
  const double x = f.left + slot * (static_cast<double>(bar) + 0.5) - width / 2;
  const MemoryBreakdown& m = stages_[bar].memory;
  const bool apart = PeakApart(bar);
  double below = 0;
  if (!apart) {
    for (MemoryPart p : kStacked) {
      if (p == part) break;
      below += BytesOf(m, p);
    }
  } else {
    // The parameters kept and the optimizer states, then the gradients
    // (left) beside what the backward frees as it makes them (right: the
    // gathered weights, the activations), then the buffers on the taller.
    const double kept = BytesOf(m, MemoryPart::kParameters);
    const double base = kept + m.optimizer_states;
    switch (part) {
      case MemoryPart::kParameters:
        break;
      case MemoryPart::kOptimizerStates:
        below = kept;
        break;
      case MemoryPart::kGradients:
      case MemoryPart::kGatheredWeights:
        below = base;
        break;
      case MemoryPart::kActivations:
        below = base + m.gathered_weights;
        break;
      case MemoryPart::kBuffers:
        below = base + std::max(m.gradients, m.gathered_weights + m.activations);
        break;
    }
  }
  const double bytes = BytesOf(m, part);
  if (bytes <= 0) return {};
  QRectF r(x, YOf(below + bytes), width, YOf(below) - YOf(below + bytes));
  if (apart && part == MemoryPart::kGradients) r.setWidth(width / 2);
  if (apart && (part == MemoryPart::kGatheredWeights || part == MemoryPart::kActivations)) r.setLeft(x + width / 2);
  return r;
}

QString MemoryView::ToolTipAt(QPoint pos) const {
  for (size_t b = 0; b < stages_.size(); ++b)
    for (MemoryPart part : kStacked)
      if (PartRect(b, part).contains(pos)) {
        const MemoryBreakdown& m = stages_[b].memory;
        std::string text =
            fmt::format("stage {}: {} {}\n", stages_[b].stage, NameOf(part), Bytes(BytesOf(m, part)).toStdString());
        for (MemoryPart p : kStacked)
          text += fmt::format("  {:<22} {}\n", NameOf(p), Bytes(BytesOf(m, p)).toStdString());
        text += fmt::format("  activations: {} per micro-batch, {:.4g} micro-batch{} in flight\n",
                            Bytes(m.activations_per_micro_batch).toStdString(), m.micro_batches_in_flight,
                            m.micro_batches_in_flight == 1 ? "" : "es");
        if (PeakApart(b))
          text += m.gathered_weights > 0
                      ? "  gradients and what the backward frees (gathered weights, activations) are not held at "
                        "once: the peak counts the larger\n"
                      : "  gradients and activations are not held at once: the peak counts the larger\n";
        if (m.host > 0) text += fmt::format("  in host memory: {}\n", Bytes(m.host).toStdString());
        text += fmt::format("peak {}", Bytes(m.peak).toStdString());
        if (capacity_ > 0)
          text += fmt::format(" of {} ({})", Bytes(capacity_).toStdString(),
                              m.peak > capacity_ ? "out of memory" : Bytes(capacity_ - m.peak).toStdString() + " free");
        return QString::fromStdString(text);
      }
  return {};
}

void MemoryView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  DrawHeader(p, QRectF(kMargin, kMargin, width() - 2 * kMargin, 0), HeaderText());
  const Frame f = FrameOf();
  const QFontMetrics m = p.fontMetrics();
  DrawLegend(&p, m, QRectF(kMargin, f.legend, width() - 2 * kMargin, 0), Legend(stages_));
  if (stages_.empty()) return;
  DrawVerticalAxis(p, f.left, f.bottom, f.top, 0, AxisMax(), AxisUnit::kBytes, "memory per device", kMargin);
  p.setPen(QColor(90, 90, 90));
  p.drawLine(QPointF(f.left, f.bottom), QPointF(f.right, f.bottom));
  // Stage labels, thinned out when they would touch.
  const double slot = (f.right - f.left) / static_cast<double>(stages_.size());
  const int every = std::max(1, static_cast<int>(std::ceil(m.horizontalAdvance("stage 00") / slot)));
  for (size_t b = 0; b < stages_.size(); ++b) {
    for (MemoryPart part : kStacked) {
      const QRectF r = PartRect(b, part);
      if (!r.isEmpty()) p.fillRect(r, MemoryColor(part));
    }
    if (b % every == 0) {
      const QString label =
          stages_.size() > 8 ? QString::number(stages_[b].stage) : QString("stage %1").arg(stages_[b].stage);
      p.setPen(QColor(60, 60, 60));
      p.drawText(QRectF(f.left + slot * static_cast<double>(b), f.bottom + 4, slot * every, m.height()),
                 every == 1 ? Qt::AlignHCenter : Qt::AlignLeft, label);
    }
  }
  p.drawText(QRectF(f.left, f.bottom + 6 + m.height(), f.right - f.left, m.height()), Qt::AlignHCenter,
             "pipeline stage");
  if (capacity_ > 0) {
    const double y = YOf(capacity_);
    p.setPen(QPen(CapacityColor(), 2, Qt::DashLine));
    p.drawLine(QPointF(f.left, y), QPointF(f.right, y));
    p.setPen(CapacityColor());
    const QString label = "device memory " + Bytes(capacity_) + ": above it, out of memory";
    p.drawText(QRectF(f.right - m.horizontalAdvance(label) - 4, y - m.height() - 2, m.horizontalAdvance(label) + 4,
                      m.height()),
               Qt::AlignRight, label);
  }
}

bool MemoryView::event(QEvent* e) {
  return ShowToolTip(this, e, [this](QPoint p) { return ToolTipAt(p); }) || QWidget::event(e);
}

void MemoryView::changeEvent(QEvent* e) {
  if (e->type() == QEvent::FontChange || e->type() == QEvent::StyleChange) {
    frame_width_ = -1;
    update();
  }
  QWidget::changeEvent(e);
}

}  // namespace shardlab::gui
