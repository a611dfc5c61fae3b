// The parts every view draws the same way: a header block of wrapped text, a
// legend of coloured marks, and a horizontal axis with 1-2-5 ticks, a scaled
// unit and a name. Each part reports where it ends, so what follows it is
// placed below and nothing overlaps at any window size.
#pragma once

#include <QColor>
#include <QPainter>
#include <QRectF>
#include <QString>
#include <vector>

#include "gui/axis.h"

namespace shardlab::gui {

// How a legend entry is drawn.
enum class LegendMark {
  kFill,      // a filled box
  kHatch,     // a hatched box (bubbles)
  kTriangle,  // a small triangle (bucket starts)
  kLine,      // a thick line (capacity)
  kDashed,    // a dashed line
};

struct LegendItem {
  QString label;
  QColor color;
  LegendMark mark = LegendMark::kFill;
};

// One value with its scaled unit as the views print it ("2.854 s", "15.0 GiB").
QString FormatValue(double value, AxisUnit unit, int significant);

// Wrapped text from the top-left of `area`; returns the y below it.
double DrawHeader(QPainter& p, const QRectF& area, const QString& text);
double HeaderHeight(const QFontMetrics& metrics, double width, const QString& text);

// Entries left to right, wrapping onto new lines within `area`'s width;
// returns the y below the last line. With `painter` null, only measures.
double DrawLegend(QPainter* p, const QFontMetrics& metrics, const QRectF& area, const std::vector<LegendItem>& items);

// The mark of one legend entry inside `box` (also used for swatches in tooltips' views).
void DrawLegendMark(QPainter& p, const QRectF& box, const LegendItem& item);

// The key to slice colours (palette.h): a swatch of hues and shades and what
// they stand for, for a tensor split `splits` ways. Returns the y below it;
// with `painter` null, only measures.
double DrawSliceKey(QPainter* p, const QFontMetrics& metrics, const QRectF& area, const std::vector<int64_t>& splits);

// A horizontal axis at `y` from `x0` to `x1` for the values [lo, hi]: ticks,
// labels kept inside [x0 - margin, x1 + margin] and the axis name centred below.
// Returns the y below the name.
double DrawHorizontalAxis(QPainter& p, double y, double x0, double x1, double lo, double hi, AxisUnit unit,
                          const QString& name);

// A vertical axis at `x` from `y_bottom` (lo) up to `y_top` (hi), labels left of it,
// the name rotated along it at `name_x`.
void DrawVerticalAxis(QPainter& p, double x, double y_bottom, double y_top, double lo, double hi, AxisUnit unit,
                      const QString& name, double name_x);

}  // namespace shardlab::gui
