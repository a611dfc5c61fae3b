// A small SVG line chart for figures the CLI writes (e.g. step time against
// the number of gradient buckets): axes with ticks, one polyline or set of
// markers per series, a legend. Self-contained SVG 1.1, no scripts.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace shardlab {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;
  std::string color = "#1f77b4";
  bool line = true;  // false: markers only
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
};

std::string RenderSvg(const LineChart& chart, int width = 720, int height = 420);

}  // namespace shardlab
