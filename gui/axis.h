// Axis ticks for the views' charts, free of Qt: values at 1-2-5 steps and one
// scaled unit for every label of the axis ("0 ms", "250 ms", "500 ms"), so a
// tick never reads 0.5708 s.
#pragma once

#include <string>
#include <vector>

namespace shardlab::gui {

// What an axis measures: its labels scale the base unit (seconds, bytes).
enum class AxisUnit {
  kSeconds,  // s, ms, µs, ns
  kBytes,    // B, KiB, MiB, GiB, TiB (powers of 1024)
};

struct AxisTicks {
  std::vector<double> values;  // base units, inside [lo, hi]
  double step = 0;             // base units between ticks
  double scale = 1;            // base units per displayed unit
  std::string unit;            // "ms"
  int decimals = 0;            // digits after the point every label needs

  // "250 ms".
  std::string Label(double value) const;
};

// At most `max_ticks` ticks (at least two intervals fit) from lo to hi.
AxisTicks NiceTicks(double lo, double hi, int max_ticks, AxisUnit unit);

// One value with the unit an axis over [0, value] would use: "2.85 s", "64 GiB".
std::string FormatAxisValue(double value, AxisUnit unit, int significant = 3);

}  // namespace shardlab::gui
