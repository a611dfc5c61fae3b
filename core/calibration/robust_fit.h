// Least squares that outliers do not drag: iteratively reweighted least
// squares with Huber weights on relative residuals (so a 10 us sample counts
// as much as a 10 s one), solved with Eigen's QR. Coefficients are kept
// non-negative (a negative latency or cost per byte has no meaning): a
// column whose coefficient comes out negative is dropped and the rest refitted.
#pragma once

#include <utility>
#include <vector>

#include <Eigen/Core>

namespace shardlab {

struct RobustFit {
  Eigen::VectorXd coefficients;
  std::vector<double> relative_residuals;  // (fitted - measured) / measured, per sample
  double rms_relative = 0;
  double max_relative = 0;
  int outliers = 0;  // samples the Huber weights discounted
};

// Fits y ~ X * c with y > 0.
RobustFit FitRobust(const Eigen::MatrixXd& x, const Eigen::VectorXd& y);

// Fits the line y ~ c0 + c1 * x through (x, y) points.
RobustFit FitRobustLine(const std::vector<std::pair<double, double>>& points);

}  // namespace shardlab
