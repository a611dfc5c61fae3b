// Colours with a meaning, shared by every view:
// - a pass, transfer or collective is coloured by its kind, the same in the
//   timeline, its legend and the compare tab;
// - a tensor slice is coloured by its coordinates: the hue says which rows
//   (every split dimension but the last) it holds, the shade which columns
//   (the last split dimension), so devices holding the same rows share a hue,
//   and a slice has the same colour in the device-matrix and tensor-map views;
// - the parts of a device's memory have one colour each.
#pragma once

#include <QColor>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/report/trace.h"

namespace shardlab::gui {

inline QColor KindColor(EventKind kind) {
  switch (kind) {
    case EventKind::kForward:
      return {66, 133, 244};
    case EventKind::kBackward:
      return {52, 168, 83};
    case EventKind::kWeightGradient:
      return {150, 200, 80};
    case EventKind::kOptimizer:
      return {128, 128, 128};
    case EventKind::kWeightGather:
      return {160, 100, 200};
    case EventKind::kGradient:
      return {255, 128, 0};
    case EventKind::kSend:
    case EventKind::kReceive:
      return {0, 150, 160};
  }
  return Qt::black;
}

inline QColor BubbleColor() { return {220, 60, 60}; }

// Which split dimensions of a tensor choose a slice's hue and which its shade:
// with two or more split dimensions, the last one shades and the others pick
// the hue; a single split dimension picks the hue.
struct SliceColoring {
  std::vector<int> hue_dims;  // tensor dimensions, in order
  int shade_dim = -1;         // -1: none
  int64_t hues = 1, shades = 1;
};

inline SliceColoring SliceColoringOf(const std::vector<int64_t>& splits) {
  SliceColoring c;
  for (size_t j = 0; j < splits.size(); ++j)
    if (splits[j] > 1) {
      c.hue_dims.push_back(static_cast<int>(j));
      c.hues *= splits[j];
    }
  if (c.hue_dims.size() >= 2) {
    c.shade_dim = c.hue_dims.back();
    c.hue_dims.pop_back();
    c.shades = splits[c.shade_dim];
    c.hues /= c.shades;
  }
  return c;
}

// The colour of the `hue`-th of `hues` and the `shade`-th of `shades`.
inline QColor SliceColorAt(int64_t hue, int64_t hues, int64_t shade, int64_t shades) {
  // Hues run most of the way round the wheel, so the first and last rows differ.
  const double h = 0.58 + 0.85 * static_cast<double>(hue) / static_cast<double>(std::max<int64_t>(hues - 1, 1));
  const double light = shades > 1 ? 0.30 + 0.50 * static_cast<double>(shade) / static_cast<double>(shades - 1) : 0.60;
  return QColor::fromHslF(static_cast<float>(h - static_cast<int>(h)), 0.65f, static_cast<float>(light));
}

// The slice at `index` of a tensor split `splits` ways per dimension.
inline QColor SliceColor(const std::vector<int64_t>& index, const std::vector<int64_t>& splits) {
  const SliceColoring c = SliceColoringOf(splits);
  int64_t hue = 0;
  for (int d : c.hue_dims) hue = hue * splits[d] + index[d];
  return SliceColorAt(hue, c.hues, c.shade_dim >= 0 ? index[c.shade_dim] : 0, c.shades);
}

// Text drawn on a colour: dark on light colours, white on dark ones.
inline QColor TextOn(const QColor& background) {
  return background.lightnessF() > 0.55 ? QColor(20, 20, 20) : Qt::white;
}

// The parts of a device's memory, in the order the memory view stacks them.
enum class MemoryPart {
  kParameters,       // the parameters the device keeps (a sharded weight's shard)
  kGatheredWeights,  // MindSpore's gathered copies of optimizer-sharded weights
  kOptimizerStates,
  kGradients,
  kActivations,
  kBuffers,  // communication buffers
};

inline QColor MemoryColor(MemoryPart part) {
  switch (part) {
    case MemoryPart::kParameters:
      return {66, 133, 244};
    case MemoryPart::kGatheredWeights:
      return {150, 188, 250};
    case MemoryPart::kOptimizerStates:
      return {251, 188, 5};
    case MemoryPart::kGradients:
      return {52, 168, 83};
    case MemoryPart::kActivations:
      return {171, 71, 188};
    case MemoryPart::kBuffers:
      return {120, 144, 156};
  }
  return Qt::black;
}

}  // namespace shardlab::gui
