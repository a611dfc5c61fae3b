#include "gui/axis.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace shardlab::gui {
namespace {

struct Scale {
  double factor;
  const char* name;
};

// From the largest unit down.
const std::vector<Scale>& ScalesOf(AxisUnit unit) {
  static const std::vector<Scale> seconds = {{1, "s"}, {1e-3, "ms"}, {1e-6, "\u00b5s"}, {1e-9, "ns"}};
  static const std::vector<Scale> bytes = {
      {1099511627776.0, "TiB"}, {1073741824.0, "GiB"}, {1048576.0, "MiB"}, {1024.0, "KiB"}, {1, "B"}};
  return unit == AxisUnit::kSeconds ? seconds : bytes;
}

// The largest unit in which `magnitude` reads at least `at_least`.
Scale ScaleFor(double magnitude, AxisUnit unit, double at_least) {
  const std::vector<Scale>& scales = ScalesOf(unit);
  for (const Scale& s : scales)
    if (magnitude >= at_least * s.factor) return s;
  return scales.back();
}

}  // namespace

std::string AxisTicks::Label(double value) const {
  double shown = value / scale;
  if (std::abs(shown) < 1e-9 * std::max(step / scale, 1e-300)) shown = 0;  // no "-0"
  return fmt::format("{:.{}f} {}", shown, decimals, unit);
}

AxisTicks NiceTicks(double lo, double hi, int max_ticks, AxisUnit unit) {
  AxisTicks t;
  if (!(hi > lo)) hi = lo + (lo != 0 ? std::abs(lo) * 1e-3 : 1e-9);
  max_ticks = std::max(max_ticks, 2);
  const double raw = (hi - lo) / (max_ticks - 1);
  // Seconds read best as "50 ms" rather than "0.05 s"; bytes by their largest value.
  const Scale scale =
      unit == AxisUnit::kSeconds ? ScaleFor(raw, unit, 0.1) : ScaleFor(std::max(std::abs(lo), std::abs(hi)), unit, 1);
  t.scale = scale.factor;
  t.unit = scale.name;
  const double shown = raw / t.scale;
  const double power = std::pow(10.0, std::floor(std::log10(shown)));
  double nice = 10;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= shown * (1 - 1e-9)) {
      nice = m;
      break;
    }
  const double step = nice * power;
  t.step = step * t.scale;
  t.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  const double first = std::ceil(lo / t.step - 1e-9) * t.step;
  for (double v = first; v <= hi + t.step * 1e-9; v += t.step) t.values.push_back(v);
  return t;
}

std::string FormatAxisValue(double value, AxisUnit unit, int significant) {
  const Scale scale = ScaleFor(std::abs(value), unit, 1);
  const double shown = value / scale.factor;
  if (shown == 0) return fmt::format("0 {}", scale.name);
  const int digits = static_cast<int>(std::floor(std::log10(std::abs(shown)))) + 1;
  return fmt::format("{:.{}f} {}", shown, std::max(0, significant - digits), scale.name);
}

}  // namespace shardlab::gui
