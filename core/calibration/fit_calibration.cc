#include "core/calibration/fit_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "core/calibration/robust_fit.h"
#include "core/graph/dtype.h"
#include "core/util/json_reader.h"

namespace shardlab {
namespace {

constexpr double kMax = std::numeric_limits<double>::max();

double Predict(const CollectiveFit& f, double bytes);

// Residuals of the fitted model over the samples; with `ranks_factor` > 0
// only those of 1 MiB and more (nccl-tests' size: the simulator's bytes times
// ranks_factor, or 1).
FitQuality QualityOver(const std::vector<std::pair<double, double>>& samples, const CollectiveFit& f,
                       int ranks_factor) {
  FitQuality q;
  double squares = 0;
  for (const auto& [bytes, seconds] : samples) {
    if (ranks_factor > 0 && bytes * ranks_factor < (1 << 20)) continue;
    const double r = (Predict(f, bytes) - seconds) / seconds;
    ++q.samples;
    squares += r * r;
    q.max_relative_residual = std::max(q.max_relative_residual, std::abs(r));
    q.outliers += std::abs(r) > 0.1;
  }
  if (q.samples > 0) q.rms_relative_residual = std::sqrt(squares / q.samples);
  return q;
}

FitQuality QualityOf(const RobustFit& f) {
  return {static_cast<int>(f.relative_residuals.size()), f.rms_relative, f.max_relative, f.outliers};
}

double Predict(const CollectiveFit& f, double bytes) {
  return std::max(f.link.floor, f.latency + f.seconds_per_byte * bytes);
}

// t = max(floor, latency + bytes * seconds_per_byte). The floor is the median
// time of the smaller half of the sizes (robust to iterations that waited for
// the scheduler), kept when it lies well above the line there; the line is
// fitted (robustly) to the larger half of the sizes where they take more than
// twice the floor, where bandwidth decides (to the larger half when fewer than
// two do).
CollectiveFit FitOneCollective(std::vector<std::pair<double, double>> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t half = std::max<size_t>(1, samples.size() / 2);
  std::vector<double> smaller;
  for (size_t i = 0; i < half; ++i) smaller.push_back(samples[i].second);
  std::sort(smaller.begin(), smaller.end());
  CollectiveFit fit;
  fit.link.floor = smaller[smaller.size() / 2];
  std::vector<std::pair<double, double>> larger(samples.begin() + static_cast<std::ptrdiff_t>(samples.size() - half),
                                                samples.end()),
      above;
  for (const auto& s : larger)
    if (s.second > 2 * fit.link.floor) above.push_back(s);
  const auto& fitted = above.size() >= 2 ? above : larger.size() >= 2 ? larger : samples;
  const RobustFit f = FitRobustLine(fitted);
  fit.latency = f.coefficients(0);
  fit.seconds_per_byte = f.coefficients(1);
  // A floor well above the line at the smallest size, where the smallest
  // size's own time lies too, is the machine's; else there is none (a sweep
  // whose small sizes are bandwidth-bound still has a median there).
  const double line = fit.latency + fit.seconds_per_byte * samples.front().first;
  if (fit.link.floor < 1.5 * line || samples.front().second < 1.5 * line) fit.link.floor = 0;
  fit.quality = QualityOver(samples, fit, 0);
  return fit;
}

void FitCollectives(const JsonNode& file, Calibration* c) {
  using Key = std::tuple<Collective, std::string, NetworkScope, int>;
  std::map<Key, std::vector<std::pair<double, double>>> groups;  // (simulator bytes, seconds)
  ObjectReader r(file);
  for (const JsonNode& s : r.Required("samples").AsArray()) {
    ObjectReader sr(s);
    const Collective op = ParseCollective(sr.Required("op").AsEnum(CalibratedCollectiveNames()));
    const std::string algorithm = sr.Required("algorithm").AsString();
    const NetworkScope scope = *ParseNetworkScope(sr.Enum("scope", "intra_server", NetworkScopeNames()));
    const int ranks = static_cast<int>(sr.RequiredInt("ranks", 1, 4096));
    const double size = sr.Required("size").AsNumber(1, kMax);
    const double seconds = sr.Required("seconds").AsNumber(1e-12, kMax);
    sr.Number("min_seconds", 0, 0, kMax);
    sr.Number("max_seconds", 0, 0, kMax);
    sr.Finish();
    groups[{op, algorithm, scope, ranks}].emplace_back(op == Collective::kAllGather ? size / ranks : size, seconds);
  }
  for (const auto& [key, samples] : groups) {
    const auto& [op, algorithm, scope, ranks] = key;
    if (samples.size() < 2)
      file.Fail(
          fmt::format("{} over {} ranks has {} size; a fit needs at least 2", ToString(op), ranks, samples.size()));
    CollectiveFit fit = FitOneCollective(samples);
    fit.op = op;
    fit.algorithm = algorithm;
    fit.scope = scope;
    fit.ranks = ranks;
    fit.large = QualityOver(samples, fit, op == Collective::kAllGather ? ranks : 1);
    fit.link = LinkOfFit(fit, algorithm == "full_mesh");
    c->collectives.push_back(fit);
  }
}

void FitGemm(const JsonNode& file, Calibration* c) {
  ObjectReader r(file);
  const std::string dtype = r.String("dtype", "float32");
  if (!ParseDType(dtype)) r.node().Child("dtype").Fail("\"" + dtype + "\" is not a dtype");
  struct Sample {
    double flops, thin, shallow, seconds;  // thin: 1/m + 1/n; shallow: 1/k
  };
  std::vector<Sample> gemms;
  for (const JsonNode& s : r.Required("samples").AsArray()) {
    ObjectReader sr(s);
    const double m = static_cast<double>(sr.RequiredInt("m", 1, 1 << 30));
    const double n = static_cast<double>(sr.RequiredInt("n", 1, 1 << 30));
    const double k = static_cast<double>(sr.RequiredInt("k", 1, 1 << 30));
    const double seconds = sr.Required("seconds").AsNumber(1e-12, kMax);
    sr.Finish();
    gemms.push_back({2 * m * n * k, 1 / m + 1 / n, 1 / k, seconds});
  }
  std::vector<std::pair<double, double>> copies;
  if (auto list = r.Optional("copies"))
    for (const JsonNode& s : list->AsArray()) {
      ObjectReader sr(s);
      const double bytes = sr.Required("bytes").AsNumber(1, kMax);
      const double seconds = sr.Required("seconds").AsNumber(1e-12, kMax);
      sr.Finish();
      copies.emplace_back(bytes, seconds);
    }
  if (gemms.size() < 4) file.Child("samples").Fail("a GEMM fit needs at least 4 shapes");
  // t = overhead + flops / peak + flops (1/m + 1/n) half_size / peak + flops / k * half_depth / peak
  // (ComputeSeconds' shape factor; the tiles' waves are left to the cluster's profile)
  Eigen::MatrixXd x(static_cast<Eigen::Index>(gemms.size()), 4);
  Eigen::VectorXd y(static_cast<Eigen::Index>(gemms.size()));
  for (size_t i = 0; i < gemms.size(); ++i) {
    const Sample& s = gemms[i];
    const auto row = static_cast<Eigen::Index>(i);
    x.row(row) << 1, s.flops, s.flops * s.thin, s.flops * s.shallow;
    y(row) = s.seconds;
  }
  const RobustFit f = FitRobust(x, y);
  if (f.coefficients(1) <= 0) file.Child("samples").Fail("the GEMM times do not grow with the FLOPs");
  c->gemm = GemmFit{dtype,
                    1 / f.coefficients(1),
                    f.coefficients(2) / f.coefficients(1),
                    f.coefficients(3) / f.coefficients(1),
                    f.coefficients(0),
                    QualityOf(f)};
  if (copies.size() >= 2) {
    const RobustFit cf = FitRobustLine(copies);
    if (cf.coefficients(1) > 0) c->copy = CopyFit{1 / cf.coefficients(1), cf.coefficients(0), QualityOf(cf)};
  }
}

}  // namespace

Calibration FitCalibration(const std::vector<JsonNode>& measurements) {
  Calibration c;
  c.software = nlohmann::json::object();
  for (const JsonNode& file : measurements) {
    ObjectReader r(file);
    r.RequireFormat("shardlab-measurements", "a file written by `shardlab bench ... -o`");
    r.RequiredInt("version", 1, 1);
    const std::string kind = r.Required("kind").AsEnum({"collectives", "gemm"});
    nlohmann::json hardware = {{"backend", r.Required("backend").AsString()},
                               {"runtime", r.Required("runtime").AsString()},
                               {"device", r.Required("device").AsString()},
                               {"ranks", r.RequiredInt("ranks", 1, 4096)},
                               {"hostname", r.String("hostname", "")}};
    const std::string date = r.String("date", "");
    if (auto sw = r.Optional("software"))
      for (const auto& [k, v] : sw->json().items()) c.software[k] = v;
    if (c.hardware.is_null()) c.hardware = nlohmann::json::object();
    c.hardware[kind] = hardware;
    c.hardware[kind]["measured"] = date;
    if (kind == "collectives") {
      r.Required("samples");
      r.Finish();
      FitCollectives(file, &c);
    } else {
      r.Required("samples");
      r.Optional("copies");
      r.Optional("dtype");
      r.Finish();
      FitGemm(file, &c);
    }
  }
  return c;
}

}  // namespace shardlab
