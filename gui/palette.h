// Colours shared by the views: a tensor slice's colour is the same in the
// device-matrix view (the devices holding it) and the tensor-map view (the
// slice itself).
#pragma once

#include <QColor>
#include <cmath>
#include <cstdint>

namespace shardlab::gui {

inline QColor SliceColor(int64_t slice_id) {
  const double hue = std::fmod(0.12 + 0.6180339887 * static_cast<double>(slice_id), 1.0);
  const double value = slice_id % 2 == 0 ? 0.95 : 0.8;
  return QColor::fromHsvF(static_cast<float>(hue), 0.55f, static_cast<float>(value));
}

}  // namespace shardlab::gui
