#include "core/calibration/robust_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/QR>

namespace shardlab {
namespace {

constexpr double kHuber = 0.1;  // relative residuals beyond 10% are down-weighted
constexpr int kIterations = 30;

Eigen::VectorXd WeightedSolve(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::VectorXd& w) {
  // Relative residuals: divide each row by y, then apply the weights.
  Eigen::VectorXd scale = w.cwiseSqrt().cwiseQuotient(y);
  const Eigen::MatrixXd a = scale.asDiagonal() * x;
  const Eigen::VectorXd b = scale.cwiseProduct(y);
  return a.colPivHouseholderQr().solve(b);
}

}  // namespace

RobustFit FitRobust(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  const Eigen::Index n = x.rows(), p = x.cols();
  if (n < p) throw std::invalid_argument("fewer samples than unknowns");
  if ((y.array() <= 0).any()) throw std::invalid_argument("a measured time is not positive");
  std::vector<bool> active(static_cast<size_t>(p), true);
  Eigen::VectorXd c = Eigen::VectorXd::Zero(p);
  Eigen::VectorXd w = Eigen::VectorXd::Ones(n);
  for (int round = 0; round < p; ++round) {
    std::vector<Eigen::Index> columns;
    for (Eigen::Index j = 0; j < p; ++j)
      if (active[static_cast<size_t>(j)]) columns.push_back(j);
    Eigen::MatrixXd xa(n, static_cast<Eigen::Index>(columns.size()));
    for (size_t j = 0; j < columns.size(); ++j) xa.col(static_cast<Eigen::Index>(j)) = x.col(columns[j]);
    w.setOnes();
    Eigen::VectorXd ca;
    for (int it = 0; it < kIterations; ++it) {
      ca = WeightedSolve(xa, y, w);
      const Eigen::VectorXd r = (xa * ca - y).cwiseQuotient(y);
      for (Eigen::Index i = 0; i < n; ++i) w(i) = std::abs(r(i)) <= kHuber ? 1.0 : kHuber / std::abs(r(i));
    }
    c.setZero();
    bool negative = false;
    for (size_t j = 0; j < columns.size(); ++j) {
      c(columns[j]) = ca(static_cast<Eigen::Index>(j));
      if (ca(static_cast<Eigen::Index>(j)) < 0 && columns.size() > 1) {
        active[static_cast<size_t>(columns[j])] = false;
        negative = true;
      }
    }
    if (!negative) break;
  }
  c = c.cwiseMax(0.0);
  RobustFit fit;
  fit.coefficients = c;
  const Eigen::VectorXd r = (x * c - y).cwiseQuotient(y);
  double squares = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    fit.relative_residuals.push_back(r(i));
    squares += r(i) * r(i);
    fit.max_relative = std::max(fit.max_relative, std::abs(r(i)));
    if (std::abs(r(i)) > kHuber) ++fit.outliers;
  }
  fit.rms_relative = std::sqrt(squares / static_cast<double>(n));
  return fit;
}

RobustFit FitRobustLine(const std::vector<std::pair<double, double>>& points) {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(points.size()), 2);
  Eigen::VectorXd y(static_cast<Eigen::Index>(points.size()));
  for (size_t i = 0; i < points.size(); ++i) {
    x.row(static_cast<Eigen::Index>(i)) << 1, points[i].first;
    y(static_cast<Eigen::Index>(i)) = points[i].second;
  }
  return FitRobust(x, y);
}

}  // namespace shardlab
