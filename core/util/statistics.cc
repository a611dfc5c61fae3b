#include "core/util/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace shardlab {

double Median(std::vector<double> values) {
  const size_t n = values.size();
  if (n == 0) return 0;
  std::sort(values.begin(), values.end());
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Less a rounding error, so that 0.07 x 100 is rank 7, not 8.
  const double rank = std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size()) - 1e-9);
  return values[static_cast<size_t>(std::max(rank, 1.0)) - 1];
}

size_t MedianSampleIndex(const std::vector<double>& values) {
  if (values.empty()) throw std::invalid_argument("the median of no measurements");
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  return order[values.size() / 2];
}

}  // namespace shardlab
