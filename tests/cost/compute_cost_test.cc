#include "core/cost/compute_cost.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/util/json_reader.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

// Kernel timings of two H100 SXM5 machines: the profile is fitted to the
// first; the second (FP8 shapes and latent-attention head sizes added) checks
// that it carries over.
nlohmann::json H100Kernels(const std::string& file) {
  return ReadJsonFile(testing::SourcePath("configs/calibration/measured/" + file));
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

DType DTypeOf(const nlohmann::json& sample) { return *ParseDType(sample["dtype"].get<std::string>()); }

TEST_CASE("GEMM efficiency falls with small dimensions and tile waves and on misaligned rows") {
  DeviceSpec d;
  d.compute_efficiency = 0.8;
  CHECK(GemmEfficiency(d, {4096, 4096, 4096}, DType::kBFloat16, false) == Approx(0.8));
  d.gemm_half_size = 128;
  d.gemm_half_depth = 256;
  CHECK(GemmEfficiency(d, {1024, 2048, 512}, DType::kBFloat16, false) ==
        Approx(0.8 / (1 + 128.0 / 1024 + 128.0 / 2048 + 256.0 / 512)));
  // The backward's dA [m,k] runs n deep and dB [k,n] runs m deep; their times add.
  const double da = 0.8 / (1 + 128.0 / 1024 + 128.0 / 512 + 256.0 / 2048);
  const double db = 0.8 / (1 + 128.0 / 512 + 128.0 / 2048 + 256.0 / 1024);
  CHECK(GemmEfficiency(d, {1024, 2048, 512}, DType::kBFloat16, true) == Approx(2 / (1 / da + 1 / db)));
  d.gemm_half_size = d.gemm_half_depth = 0;
  d.compute_units = 4;
  d.gemm_tiles = {{128, 128, 1.0}};
  // 4 tiles fill one wave; a fifth starts a second wave that is 1/4 busy.
  CHECK(GemmEfficiency(d, {256, 256, 64}, DType::kBFloat16, false) == Approx(0.8));
  CHECK(GemmEfficiency(d, {256, 384, 64}, DType::kBFloat16, false) == Approx(0.8 * 6 / 8.0));
  // The backward's dA [m,k] and dB [k,n] fill their own waves; their times add.
  const double a = 256.0 * 64 / (1 * 4 * 128 * 128), b = 64.0 * 384 / (1 * 4 * 128 * 128);
  CHECK(GemmEfficiency(d, {256, 384, 64}, DType::kBFloat16, true) == Approx(0.8 * 2 / (1 / a + 1 / b)));
  // A batched kernel runs every product's tiles in the same waves.
  CHECK(GemmEfficiency(d, {256, 384, 64, 4}, DType::kBFloat16, false) == Approx(0.8 * 24 / 24.0));
  CHECK(GemmEfficiency(d, {256, 384, 64, 3}, DType::kBFloat16, false) == Approx(0.8 * 18 / 20.0));
  // A smaller tile wins when it fills the machine better, at its own efficiency.
  d.gemm_tiles.push_back({64, 64, 0.9});
  CHECK(GemmEfficiency(d, {256, 384, 64}, DType::kBFloat16, false) == Approx(0.8 * 0.9 * 24 / 24.0));
  d.compute_units = 0;
  d.gemm_alignment = 16;
  d.misaligned_gemm_efficiency = 0.4;
  CHECK(GemmEfficiency(d, {4100, 4096, 4096}, DType::kBFloat16, false) == Approx(0.8));  // m is not a row length
  CHECK(GemmEfficiency(d, {4096, 4100, 4096}, DType::kBFloat16, false) == Approx(0.32));
  CHECK(GemmEfficiency(d, {4096, 4104, 4096}, DType::kBFloat16, false) == Approx(0.8));  // 8 bf16 = 16 bytes
  CHECK(GemmEfficiency(d, {4096, 4104, 4096}, DType::kFloat8E4M3, false) == Approx(0.32));
  // FP8 starts from its own efficiency; E5M2 takes E4M3's unless it has one.
  d.gemm_alignment = 0;
  d.gemm_efficiency = {{DType::kFloat8E4M3, 0.6}};
  CHECK(GemmEfficiency(d, {4096, 4096, 4096}, DType::kFloat8E4M3, false) == Approx(0.6));
  CHECK(GemmEfficiency(d, {4096, 4096, 4096}, DType::kFloat8E5M2, false) == Approx(0.6));
  d.gemm_efficiency[DType::kFloat8E5M2] = 0.5;
  CHECK(GemmEfficiency(d, {4096, 4096, 4096}, DType::kFloat8E5M2, false) == Approx(0.5));
  CHECK(GemmEfficiency(d, {4096, 4096, 4096}, DType::kBFloat16, false) == Approx(0.8));
}

TEST_CASE("fused attention efficiency rises with the keys each query sees and the head size") {
  DeviceSpec d;
  d.compute_efficiency = 0.7;
  CHECK(AttentionEfficiency(d, {4096, 128, false}, false) == Approx(0.7));  // no attention figures
  d.attention = {0.8, 0.6, 1024, 32};
  CHECK(AttentionEfficiency(d, {4096, 128, false}, false) == Approx(0.8 / (1 + 0.25 + 0.25)));
  CHECK(AttentionEfficiency(d, {8192, 128, true}, false) == Approx(0.8 / 1.5));  // causal: half the keys
  CHECK(AttentionEfficiency(d, {4096, 128, false}, true) == Approx(0.6 / 1.5));
  CHECK(AttentionEfficiency(d, {4096, 64, false}, false) < AttentionEfficiency(d, {4096, 128, false}, false));
}

TEST_CASE("the Ascend 910B's fused attention follows the published torch_npu sweep once core occupancy is divided out") {
  // hw-native-sys/pto-isa, flash_atten README, '910B2 Multi-Core Comparison': one head, fp16,
  // head_dim 128, non-causal; TFLOP/s by sequence length. One head's 128-row query blocks fill
  // blocks / (24 x waves) of the 24 cores; a training step's many heads fill them all.
  const ClusterSpec a2 = testing::ShippedCluster("atlas800t-a2-910b");
  const std::pair<int64_t, double> measured[] = {{1024, 9.18},   {2048, 30.33},  {4096, 72.61},
                                                 {8192, 97.30}, {16384, 122.88}, {32768, 150.78}};
  for (const auto& [length, tflops] : measured) {
    INFO(length);
    const double blocks = static_cast<double>(length / 128);
    const double occupancy = blocks / (24 * std::ceil(blocks / 24));
    const double efficiency = tflops * 1e12 / occupancy / a2.device.peak_flops.at(DType::kFloat16);
    const double predicted = AttentionEfficiency(a2.device, {length, 128, false}, false);
    CHECK(std::abs(predicted / efficiency - 1) < (length == 4096 ? 0.30 : 0.10));
  }
}

// |predicted / measured - 1| of every GEMM of 60 us and more (shorter ones sit
// on the timer's floor) in the measurement file's groups.
std::vector<double> GemmErrors(const ClusterSpec& cluster, const nlohmann::json& measured,
                               const std::vector<std::string>& groups) {
  std::vector<double> errors;
  for (const std::string& group : groups)
    for (const auto& g : measured[group]) {
      if (g.contains("error") || g["seconds"].get<double>() < 60e-6) continue;
      const GemmShape shape{g["m"].get<int64_t>(), g["n"].get<int64_t>(), g["k"].get<int64_t>(),
                            g.value("batch", int64_t{1})};
      const DType dtype = DTypeOf(g);
      const double batch = static_cast<double>(shape.batch);
      const double flops = 2.0 * batch * static_cast<double>(shape.m * shape.n) * static_cast<double>(shape.k);
      const double bytes = batch * (static_cast<double>(DTypeBytes(dtype) * (shape.m * shape.k + shape.k * shape.n)) +
                                    2.0 * static_cast<double>(shape.m * shape.n));
      const double predicted =
          ComputeSeconds(flops, bytes, dtype, cluster, false, KernelShape{shape, {}, false}).seconds;
      errors.push_back(std::abs(predicted / g["seconds"].get<double>() - 1));
    }
  return errors;
}

std::vector<double> AttentionErrors(const ClusterSpec& cluster, const nlohmann::json& measured,
                                    const std::string& group) {
  std::vector<double> errors;
  for (const auto& a : measured[group]) {
    if (a.value("backend", "") != "cudnn_attention" || a.contains("error")) continue;
    const double pairs = a["batch"].get<double>() * a["heads"].get<double>() * std::pow(a["seq"].get<double>(), 2) *
                         (a["causal"].get<bool>() ? 0.5 : 1.0);
    const AttentionShape shape{a["seq"].get<int64_t>(), a["head_dim"].get<int64_t>(), a["causal"].get<bool>()};
    for (const bool backward : {false, true}) {
      const double flops = (backward ? 10.0 : 4.0) * pairs * a["head_dim"].get<double>();
      const double predicted =
          ComputeSeconds(flops, 0, DType::kBFloat16, cluster, false, KernelShape{{}, shape, backward}).seconds;
      errors.push_back(std::abs(predicted / a[backward ? "backward_seconds" : "forward_seconds"].get<double>() - 1));
    }
  }
  return errors;
}

// The errors' median and 90th percentile stay under the bounds.
void CheckErrors(const std::vector<double>& errors, size_t at_least, double median, double p90) {
  REQUIRE(errors.size() >= at_least);
  CHECK(Quantile(errors, 0.5) < median);
  CHECK(Quantile(errors, 0.9) < p90);
}

TEST_CASE("the H100 profile reproduces the GEMMs and fused attention it was fitted to") {
  const ClusterSpec h100 = testing::ShippedCluster("dgx-h100-ndr");
  const nlohmann::json measured = H100Kernels("h100-sxm5-kernels.json");
  CheckErrors(GemmErrors(h100, measured, {"gemm", "gemm_waves"}), 100, 0.05, 0.12);
  CheckErrors(AttentionErrors(h100, measured, "flash_attention"), 40, 0.10, 0.20);
}

TEST_CASE("the H100 profile carries over to a second H100 and to FP8 GEMMs") {
  const ClusterSpec h100 = testing::ShippedCluster("dgx-h100-ndr");
  const nlohmann::json measured = H100Kernels("h100-sxm5-kernels-b.json");
  CheckErrors(GemmErrors(h100, measured, {"gemm", "gemm_waves"}), 100, 0.06, 0.15);
  CheckErrors(GemmErrors(h100, measured, {"gemm_fp8_shapes"}), 40, 0.05, 0.13);
  CheckErrors(AttentionErrors(h100, measured, "flash_attention"), 40, 0.12, 0.20);
}

// Experts run as one batched kernel: its tiles fill the waves together, and
// only the thin products' own inefficiency remains (m = 64..1024 tokens per
// expert, 1 to 64 experts).
TEST_CASE("the H100 profile reproduces batched GEMMs as experts run them") {
  const ClusterSpec h100 = testing::ShippedCluster("dgx-h100-ndr");
  CheckErrors(GemmErrors(h100, H100Kernels("h100-sxm5-kernels-batched.json"), {"gemm_batched"}), 50, 0.12, 0.25);
}

TEST_CASE("a 4096 x 4100 GEMM runs far slower than a 4096 x 4096 one on the H100 profile") {
  const ClusterSpec h100 = testing::ShippedCluster("dgx-h100-ndr");
  const double aligned = GemmEfficiency(h100.device, {4096, 4096, 4096}, DType::kBFloat16, false);
  const double ragged = GemmEfficiency(h100.device, {4096, 4100, 4096}, DType::kBFloat16, false);
  const double padded = GemmEfficiency(h100.device, {4096, 4160, 4096}, DType::kBFloat16, false);
  CHECK(ragged < 0.5 * aligned);
  CHECK(padded > 0.9 * aligned);
}

}  // namespace
}  // namespace shardlab
