// `shardlab calibrate`: fits the cost model to measurement files written by
// `shardlab bench` and writes a calibration file a cluster can name; with
// --check-profile, checks a cluster's device profile against kernel
// micro-benchmarks (bench/gpu/kernels.py) instead.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/calibration/fit_calibration.h"
#include "core/calibration/kernel_profile_check.h"
#include "core/config/cluster_config.h"
#include "core/config/units.h"
#include "core/util/atomic_file.h"
#include "core/util/json_reader.h"
#include "exec/micro_benchmarks.h"

namespace shardlab::cli {

namespace {

std::string Percent(double fraction) { return fmt::format("{:.1f}%", 100 * fraction); }

int CheckProfile(const CalibrateArgs& args) {
  const nlohmann::json cluster_document = ReadJsonFile(args.cluster_file);
  const ClusterSpec cluster = ReadClusterSpec(JsonNode(cluster_document, args.cluster_file));
  nlohmann::json out = {{"cluster", cluster.name},
                        {"device", cluster.device.model},
                        {"timer_floor_seconds", kTimerFloorSeconds},
                        {"files", nlohmann::json::array()}};
  for (const std::string& file : args.measurement_files) {
    const nlohmann::json document = ReadJsonFile(file);
    const KernelProfileCheck check = CheckKernelProfile(JsonNode(document, file), cluster);
    nlohmann::json families = nlohmann::json::array();
    for (const KernelFamilyCheck& f : check.families)
      families.push_back({{"family", f.family},
                          {"unit", f.unit},
                          {"samples", f.samples},
                          {"measured_min", f.measured_min},
                          {"measured_max", f.measured_max},
                          {"median_error", f.median_error},
                          {"p90_error", f.p90_error},
                          {"max_error", f.max_error},
                          {"median_signed_error", f.median_signed_error}});
    nlohmann::json samples = nlohmann::json::array();
    for (const KernelSample& k : check.samples)
      samples.push_back({{"group", k.group},
                         {"family", k.family},
                         {"kernel", k.kernel},
                         {"unit", k.unit},
                         {"measured", k.measured},
                         {"predicted", k.predicted}});
    out["files"].push_back(
        {{"file", file}, {"measured_device", check.device}, {"families", families}, {"samples", samples}});
    if (args.json) continue;
    std::cout << fmt::format("{} ({}) against {}'s {} profile, kernels of {:.0f} us and more\n", file, check.device,
                             cluster.name, cluster.device.model, kTimerFloorSeconds * 1e6);
    std::cout << fmt::format("  {:<40} {:>7}  {:<18} {:>11} {:>6} {:>7} {:>7}\n", "kernels", "samples", "measured",
                             "|error| med", "p90", "max", "bias");
    for (const KernelFamilyCheck& f : check.families)
      std::cout << fmt::format("  {:<40} {:>7}  {:<18} {:>11} {:>6} {:>7} {:>+6.1f}%\n", f.family, f.samples,
                               fmt::format("{:.0f}-{:.0f} {}", f.measured_min, f.measured_max, f.unit),
                               Percent(f.median_error), Percent(f.p90_error), Percent(f.max_error),
                               100 * f.median_signed_error);
  }
  if (args.json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int Calibrate(const CalibrateArgs& args) {
  if (args.check_profile) return CheckProfile(args);
  std::vector<nlohmann::json> documents;
  documents.reserve(args.measurement_files.size());
  std::vector<JsonNode> nodes;
  for (const std::string& file : args.measurement_files) {
    documents.push_back(ReadJsonFile(file));
    nodes.emplace_back(documents.back(), file);
  }
  Calibration c = FitCalibration(nodes);
  c.created = exec::UtcNow();
  const nlohmann::json out = ToJson(c);
  if (args.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << fmt::format("calibration from {} measurement file(s)\n", nodes.size());
    if (!c.collectives.empty()) {
      std::cout << fmt::format("{:>14} {:>6} {:>12} {:>10} {:>10} {:>9} {:>9} {:>9} {:>14}\n", "collective", "ranks",
                               "latency(us)", "us/MiB", "link GB/s", "step(us)", "rms res", "max res",
                               "max res >=1MiB");
      for (const CollectiveFit& f : c.collectives)
        std::cout << fmt::format("{:>14} {:>6} {:>12.2f} {:>10.1f} {:>10.3f} {:>9.2f} {:>8.1f}% {:>8.1f}% {:>13.1f}%\n",
                                 ToString(f.op), f.ranks, f.latency * 1e6, f.seconds_per_byte * 1e6 * (1 << 20),
                                 f.link.bandwidth / 1e9, f.link.latency * 1e6, 100 * f.quality.rms_relative_residual,
                                 100 * f.quality.max_relative_residual, 100 * f.large.max_relative_residual);
    }
    if (c.gemm)
      std::cout << fmt::format(
          "GEMM ({}): peak {}, gemm_half_size {:.0f}, gemm_half_depth {:.0f}, overhead {:.1f} us; "
          "residuals rms {:.1f}%, max {:.1f}% over {} shapes\n",
          c.gemm->dtype, FormatQuantity(c.gemm->peak_flops, Quantity::kFlopsPerSecond), c.gemm->half_size,
          c.gemm->half_depth, c.gemm->overhead * 1e6, 100 * c.gemm->quality.rms_relative_residual,
          100 * c.gemm->quality.max_relative_residual, c.gemm->quality.samples);
    if (c.copy)
      std::cout << fmt::format("memory: {} (read + write), overhead {:.1f} us; residuals rms {:.1f}%, max {:.1f}%\n",
                               FormatQuantity(c.copy->bandwidth, Quantity::kBytesPerSecond), c.copy->overhead * 1e6,
                               100 * c.copy->quality.rms_relative_residual,
                               100 * c.copy->quality.max_relative_residual);
  }
  if (!args.out_file.empty()) WriteFileAtomically(args.out_file, out.dump(2) + "\n");
  return 0;
}

}  // namespace shardlab::cli
