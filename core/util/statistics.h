// Order statistics shared by the commands that summarise repeated
// measurements or errors: one definition of the median everywhere.
#pragma once

#include <cstddef>
#include <vector>

namespace shardlab {

// The median: the middle value, or the mean of the two middle values of an
// even count; 0 for none.
double Median(std::vector<double> values);

// The q-quantile (q in (0, 1]) by the nearest rank: the smallest value at
// least a share q of the values do not exceed (sorted, index ceil(q n) - 1);
// 0 for none.
double Quantile(std::vector<double> values, double q);

// Where the measurement that stands for the median sits (the middle one, the
// upper of the two middle ones for an even count), when a whole sample must
// be kept (a measured step with its timeline). `values` must not be empty.
size_t MedianSampleIndex(const std::vector<double>& values);

}  // namespace shardlab
