#include "gui/chart_parts.h"

#include <QFontMetrics>
#include <QPolygonF>
#include <algorithm>

#include "gui/palette.h"

namespace shardlab::gui {
namespace {

constexpr double kSwatch = 14, kSwatchGap = 5, kItemGap = 16, kLineGap = 4, kTick = 4;

}  // namespace

QString FormatValue(double value, AxisUnit unit, int significant) {
  return QString::fromStdString(FormatAxisValue(value, unit, significant));
}

double HeaderHeight(const QFontMetrics& metrics, double width, const QString& text) {
  const QRect box = metrics.boundingRect(QRect(0, 0, static_cast<int>(std::max(width, 10.0)), 100000),
                                         Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
  return box.height();
}

double DrawHeader(QPainter& p, const QRectF& area, const QString& text) {
  const double h = HeaderHeight(p.fontMetrics(), area.width(), text);
  p.save();
  p.setPen(Qt::black);
  p.drawText(QRectF(area.left(), area.top(), area.width(), h), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
  p.restore();
  return area.top() + h;
}

void DrawLegendMark(QPainter& p, const QRectF& box, const LegendItem& item) {
  p.save();
  switch (item.mark) {
    case LegendMark::kFill:
      p.fillRect(box, item.color);
      break;
    case LegendMark::kHatch:
      p.fillRect(box, QBrush(item.color, Qt::BDiagPattern));
      p.setPen(item.color);
      p.drawRect(box);
      break;
    case LegendMark::kTriangle: {
      const QPolygonF tip(
          {{box.center().x(), box.top() + 2}, {box.left() + 2, box.bottom() - 2}, {box.right() - 2, box.bottom() - 2}});
      p.setPen(Qt::NoPen);
      p.setBrush(item.color);
      p.drawPolygon(tip);
      break;
    }
    case LegendMark::kLine:
    case LegendMark::kDashed:
      p.setPen(QPen(item.color, 2, item.mark == LegendMark::kLine ? Qt::SolidLine : Qt::DashLine));
      p.drawLine(QPointF(box.left(), box.center().y()), QPointF(box.right(), box.center().y()));
      break;
  }
  p.restore();
}

double DrawLegend(QPainter* p, const QFontMetrics& metrics, const QRectF& area, const std::vector<LegendItem>& items) {
  const double line = std::max<double>(metrics.height(), kSwatch);
  double x = area.left(), y = area.top();
  for (const LegendItem& item : items) {
    const double w = kSwatch + kSwatchGap + metrics.horizontalAdvance(item.label);
    if (x > area.left() && x + w > area.right()) {
      x = area.left();
      y += line + kLineGap;
    }
    if (p) {
      DrawLegendMark(*p, QRectF(x, y + (line - kSwatch) / 2, kSwatch, kSwatch), item);
      p->save();
      p->setPen(QColor(40, 40, 40));
      p->drawText(QRectF(x + kSwatch + kSwatchGap, y, w, line), Qt::AlignLeft | Qt::AlignVCenter, item.label);
      p->restore();
    }
    x += w + kItemGap;
  }
  return items.empty() ? area.top() : y + line;
}

double DrawSliceKey(QPainter* p, const QFontMetrics& metrics, const QRectF& area, const std::vector<int64_t>& splits) {
  const SliceColoring c = SliceColoringOf(splits);
  QString text;
  auto dims = [](const std::vector<int>& d) {
    QStringList names;
    for (int j : d) names << QString::number(j);
    return (d.size() == 1 ? "tensor dim " : "tensor dims ") + names.join(", ");
  };
  if (c.hue_dims.empty())
    text = "colour: one slice (the whole tensor on every device)";
  else
    text = QString("colour: hue = slice along %1 (%2 slices)").arg(dims(c.hue_dims)).arg(c.hues);
  if (c.shade_dim >= 0) text += QString(", shade = slice along tensor dim %1 (%2)").arg(c.shade_dim).arg(c.shades);
  // Up to 24 hues across and 6 shades down, sampled evenly.
  constexpr double kCell = 9;
  const int64_t across = std::min<int64_t>(c.hues, 24), down = std::min<int64_t>(c.shades, 6);
  const double swatch_w = static_cast<double>(across) * kCell, swatch_h = static_cast<double>(down) * kCell;
  const double h = std::max<double>(swatch_h, metrics.height());
  if (p) {
    for (int64_t i = 0; i < across; ++i)
      for (int64_t j = 0; j < down; ++j) {
        const int64_t hue = across > 1 ? i * (c.hues - 1) / (across - 1) : 0;
        const int64_t shade = down > 1 ? j * (c.shades - 1) / (down - 1) : 0;
        p->fillRect(QRectF(area.left() + static_cast<double>(i) * kCell, area.top() + static_cast<double>(j) * kCell,
                           kCell, kCell),
                    SliceColorAt(hue, c.hues, shade, c.shades));
      }
    p->save();
    p->setPen(QColor(40, 40, 40));
    p->drawText(QRectF(area.left() + swatch_w + 8, area.top(), area.width() - swatch_w - 8, h),
                Qt::AlignLeft | Qt::AlignVCenter, text);
    p->restore();
  }
  return area.top() + h;
}

double DrawHorizontalAxis(QPainter& p, double y, double x0, double x1, double lo, double hi, AxisUnit unit,
                          const QString& name) {
  const QFontMetrics metrics = p.fontMetrics();
  const int max_ticks = std::clamp(static_cast<int>((x1 - x0) / 90), 2, 12);
  const AxisTicks ticks = NiceTicks(lo, hi, max_ticks, unit);
  p.save();
  p.setPen(QColor(90, 90, 90));
  p.drawLine(QPointF(x0, y), QPointF(x1, y));
  const double text_y = y + kTick + 2;
  for (double v : ticks.values) {
    const double x = x0 + (v - lo) / (hi - lo) * (x1 - x0);
    p.drawLine(QPointF(x, y), QPointF(x, y + kTick));
    const QString label = QString::fromStdString(ticks.Label(v));
    const double w = metrics.horizontalAdvance(label);
    // Centred under the tick, but never past the axis' ends by more than a few pixels.
    const double left = std::clamp(x - w / 2, x0 - 8, x1 + 8 - w);
    p.drawText(QRectF(left, text_y, w + 2, metrics.height()), Qt::AlignLeft | Qt::AlignTop, label);
  }
  const double name_y = text_y + metrics.height() + 2;
  p.drawText(QRectF(x0, name_y, x1 - x0, metrics.height()), Qt::AlignHCenter | Qt::AlignTop, name);
  p.restore();
  return name_y + metrics.height();
}

void DrawVerticalAxis(QPainter& p, double x, double y_bottom, double y_top, double lo, double hi, AxisUnit unit,
                      const QString& name, double name_x) {
  const QFontMetrics metrics = p.fontMetrics();
  const int max_ticks = std::clamp(static_cast<int>((y_bottom - y_top) / 40), 2, 10);
  const AxisTicks ticks = NiceTicks(lo, hi, max_ticks, unit);
  p.save();
  p.setPen(QColor(90, 90, 90));
  p.drawLine(QPointF(x, y_bottom), QPointF(x, y_top));
  for (double v : ticks.values) {
    const double y = y_bottom - (v - lo) / (hi - lo) * (y_bottom - y_top);
    p.drawLine(QPointF(x - kTick, y), QPointF(x, y));
    const QString label = QString::fromStdString(ticks.Label(v));
    const double w = metrics.horizontalAdvance(label);
    p.drawText(QRectF(x - kTick - 4 - w, y - metrics.height() / 2.0, w + 2, metrics.height()),
               Qt::AlignRight | Qt::AlignVCenter, label);
  }
  p.translate(name_x, (y_bottom + y_top) / 2);
  p.rotate(-90);
  const double w = metrics.horizontalAdvance(name);
  p.drawText(QRectF(-w / 2, 0, w + 2, metrics.height()), Qt::AlignCenter, name);
  p.restore();
}

}  // namespace shardlab::gui
