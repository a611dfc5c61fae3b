#include "gui/communication_view.h"

#include <QLinearGradient>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "core/config/units.h"
#include "gui/axis.h"
#include "gui/chart_parts.h"
#include "gui/tooltip.h"

namespace shardlab::gui {
namespace {

constexpr double kMargin = 10, kLeft = 260, kStats = 150, kStrip = 26, kRow = 56;
constexpr double kBar = 12;  // a tenth's bar in the per-link histogram, with its gap

QString Percent(double u) { return QString::number(100 * u, 'f', u < 0.1 ? 1 : 0) + "%"; }

QString Rate(double bytes_per_second) {
  return QString::fromStdString(FormatQuantity(bytes_per_second, Quantity::kBytesPerSecond));
}

}  // namespace

QColor UtilisationColor(double u) {
  struct Stop {
    double at;
    QColor color;
  };
  static const Stop stops[] = {{0, QColor(255, 255, 255)},
                               {0.25, QColor(255, 224, 120)},
                               {0.6, QColor(240, 110, 40)},
                               {1.0, QColor(130, 0, 20)}};
  u = std::clamp(u, 0.0, 1.0);
  for (size_t i = 1; i < std::size(stops); ++i)
    if (u <= stops[i].at) {
      const double t = (u - stops[i - 1].at) / (stops[i].at - stops[i - 1].at);
      const QColor &a = stops[i - 1].color, &b = stops[i].color;
      return QColor::fromRgbF(static_cast<float>(a.redF() + t * (b.redF() - a.redF())),
                              static_cast<float>(a.greenF() + t * (b.greenF() - a.greenF())),
                              static_cast<float>(a.blueF() + t * (b.blueF() - a.blueF())));
    }
  return stops[std::size(stops) - 1].color;
}

CommunicationView::CommunicationView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(600, 240);
}

void CommunicationView::SetResult(const StepResult& result) {
  usage_ = result.link_usage;
  step_seconds_ = result.step_seconds;
  engine_ = result.engine;
  top_width_ = -1;
  updateGeometry();
  update();
}

QString CommunicationView::HeaderText() const {
  if (usage_.empty())
    return QString(
               "No link usage in this %1 result: link utilisation comes from SimGrid. Choose the SimGrid "
               "engine in the side panel and Run, or open a result.json of shardlab simulate --engine simgrid "
               "--out.")
        .arg(QString::fromStdString(engine_));
  const auto hot = std::max_element(usage_.begin(), usage_.end(), [](const LinkClassUsage& a, const LinkClassUsage& b) {
    return a.busiest_utilisation < b.busiest_utilisation;
  });
  return QString("link utilisation over the step (SimGrid): the busiest link is %1 (%2), busy %3 of the step")
      .arg(QString::fromStdString(hot->busiest), QString::fromStdString(hot->name), Percent(hot->busiest_utilisation));
}

QString CommunicationView::RowLabel(size_t row) const {
  const LinkClassUsage& u = usage_[row];
  return QString("%1\n%2 x %3").arg(QString::fromStdString(u.name)).arg(u.links).arg(Rate(u.bandwidth));
}

double CommunicationView::Top() const {
  if (top_width_ != width()) {  // measured once per width: every bin's rectangle needs it
    const QFontMetrics m = fontMetrics();
    const double header = kMargin + HeaderHeight(m, width() - 2 * kMargin, HeaderText());
    top_ = header + 8 + std::max<double>(m.height(), 14) + 18;  // the colour key, then the strips
    top_width_ = width();
  }
  return top_;
}

double CommunicationView::Right() const { return width() - kMargin - kStats; }

double CommunicationView::RowHeight() const { return kRow; }

QRectF CommunicationView::BinRect(size_t row, size_t bin) const {
  const LinkClassUsage& u = usage_[row];
  const double scale = (Right() - kLeft) / std::max(step_seconds_, 1e-12);
  const double x0 = kLeft + static_cast<double>(bin) * u.bin_seconds * scale;
  const double x1 = std::min(Right(), kLeft + static_cast<double>(bin + 1) * u.bin_seconds * scale);
  return {x0, Top() + static_cast<double>(row) * RowHeight(), std::max(x1 - x0, 0.5), kStrip};
}

QRectF CommunicationView::HistogramRect(size_t row, size_t tenth) const {
  const LinkClassUsage& u = usage_[row];
  const int64_t count = tenth < u.links_by_utilisation.size() ? u.links_by_utilisation[tenth] : 0;
  const double x = Right() + 14 + static_cast<double>(tenth) * kBar;
  const double bottom = Top() + static_cast<double>(row) * RowHeight() + kStrip;
  if (count <= 0) return {x, bottom, kBar - 2, 0};
  // A log scale: one hot link among thousands still stands 3 px tall.
  const double h = std::max(3.0, kStrip * std::log1p(static_cast<double>(count)) /
                                     std::log1p(static_cast<double>(std::max<int64_t>(u.links, 1))));
  return {x, bottom - h, kBar - 2, h};
}

QString CommunicationView::ToolTipAt(QPoint pos) const {
  for (size_t r = 0; r < usage_.size(); ++r) {
    const LinkClassUsage& u = usage_[r];
    for (size_t t = 0; t < u.links_by_utilisation.size(); ++t) {
      const QRectF bar = HistogramRect(r, t);
      // The whole column answers, so an empty tenth says it is empty.
      if (!QRectF(bar.left(), bar.bottom() - kStrip, bar.width(), kStrip).contains(pos)) continue;
      QString text = QString("%1: %2 of %3 links busy %4-%5% of the step")
                         .arg(QString::fromStdString(u.name))
                         .arg(u.links_by_utilisation[t])
                         .arg(u.links)
                         .arg(10 * t)
                         .arg(10 * (t + 1));
      if (u.links_by_utilisation[t] > 0 && static_cast<size_t>(std::min(9.0, u.busiest_utilisation * 10)) == t)
        text += QString("\nthe busiest: %1 at %2").arg(QString::fromStdString(u.busiest), Percent(u.busiest_utilisation));
      return text;
    }
    for (size_t b = 0; b < u.utilisation.size(); ++b)
      if (BinRect(r, b).contains(pos)) {
        const double start = static_cast<double>(b) * u.bin_seconds;
        return QString(
                   "%1 (%2 links of %3)\n%4 .. %5: %6 of their capacity in use\nmean over the step %7, busiest "
                   "link %8 at %9")
            .arg(QString::fromStdString(u.name))
            .arg(u.links)
            .arg(Rate(u.bandwidth))
            .arg(FormatValue(start, AxisUnit::kSeconds, 4),
                 FormatValue(std::min(start + u.bin_seconds, step_seconds_), AxisUnit::kSeconds, 4),
                 Percent(u.utilisation[b]), Percent(u.mean_utilisation), QString::fromStdString(u.busiest),
                 Percent(u.busiest_utilisation));
      }
  }
  return {};
}

void CommunicationView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const double header = DrawHeader(p, QRectF(kMargin, kMargin, width() - 2 * kMargin, 0), HeaderText());
  if (usage_.empty()) return;
  const QFontMetrics m = p.fontMetrics();
  // The colour key: utilisation from 0 to 100%.
  const QRectF key(kLeft, header + 8, 200, 14);
  for (int i = 0; i < static_cast<int>(key.width()); ++i)
    p.fillRect(QRectF(key.left() + i, key.top(), 1, key.height()), UtilisationColor(i / (key.width() - 1)));
  p.setPen(QColor(90, 90, 90));
  p.drawRect(key);
  p.drawText(QRectF(kMargin, key.top() - 2, kLeft - kMargin - 8, key.height() + 4), Qt::AlignRight | Qt::AlignVCenter,
             "capacity in use");
  p.drawText(QRectF(key.right() + 6, key.top() - 2, 200, key.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
             "0% .. 100%");
  // Results written before links were counted by their utilisation have no histograms.
  const bool histograms = std::any_of(usage_.begin(), usage_.end(),
                                      [](const LinkClassUsage& u) { return !u.links_by_utilisation.empty(); });
  if (histograms)
    p.drawText(QRectF(Right() + 14, key.top() - 2, kStats, key.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
               "links by utilisation");
  for (size_t r = 0; r < usage_.size(); ++r) {
    const LinkClassUsage& u = usage_[r];
    const double y = Top() + static_cast<double>(r) * RowHeight();
    p.setPen(Qt::black);
    p.drawText(QRectF(kMargin, y - 4, kLeft - kMargin - 8, kStrip + 8), Qt::AlignLeft | Qt::AlignVCenter, RowLabel(r));
    for (size_t b = 0; b < u.utilisation.size(); ++b) p.fillRect(BinRect(r, b), UtilisationColor(u.utilisation[b]));
    p.setPen(QColor(150, 150, 150));
    p.drawRect(QRectF(kLeft, y, Right() - kLeft, kStrip));
    // Every link by its own utilisation: tenths from idle (left) to saturated (right).
    if (!u.links_by_utilisation.empty()) {
      p.setPen(QColor(200, 200, 200));
      p.drawLine(QPointF(Right() + 14, y + kStrip), QPointF(Right() + 14 + 10 * kBar - 2, y + kStrip));
      for (size_t t = 0; t < u.links_by_utilisation.size(); ++t) {
        const QRectF bar = HistogramRect(r, t);
        if (bar.height() <= 0) continue;
        p.fillRect(bar, UtilisationColor((static_cast<double>(t) + 0.5) / 10));
        p.setPen(QColor(120, 120, 120));
        p.drawRect(bar);
      }
      p.setPen(QColor(90, 90, 90));
      p.drawText(QRectF(Right() + 14, y + kStrip + 2, kStats - 14, m.height()), Qt::AlignLeft, "0%   ..   100%");
    }
    p.setPen(QColor(90, 90, 90));
    p.drawText(QRectF(kLeft, y + kStrip + 2, Right() - kLeft, m.height()), Qt::AlignLeft,
               QString("mean %1, peak %2; busiest link %3, %4 of the step")
                   .arg(Percent(u.mean_utilisation), Percent(u.peak_utilisation), QString::fromStdString(u.busiest),
                        Percent(u.busiest_utilisation)));
  }
  DrawHorizontalAxis(p, Top() + static_cast<double>(usage_.size()) * RowHeight() + 4, kLeft, Right(), 0, step_seconds_,
                     AxisUnit::kSeconds, "time since the step started");
}

bool CommunicationView::event(QEvent* e) {
  return ShowToolTip(this, e, [this](QPoint p) { return ToolTipAt(p); }) || QWidget::event(e);
}

}  // namespace shardlab::gui
