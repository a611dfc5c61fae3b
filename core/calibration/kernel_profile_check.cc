#include "core/calibration/kernel_profile_check.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/cost/compute_cost.h"
#include "core/graph/dtype.h"
#include "core/util/json_reader.h"
#include "core/util/statistics.h"

namespace shardlab {
namespace {

// Every kernel timed, in the order read.
class Collector {
 public:
  // A kernel of `work` units (FLOPs or bytes) measured and predicted.
  void Add(const std::string& group, const std::string& family, const std::string& unit, const std::string& kernel,
           double work, double predicted_seconds, double measured_seconds) {
    const double scale = unit == "TFLOP/s" ? 1e12 : 1e9;
    samples_.push_back(
        {group, family, kernel, unit, work / measured_seconds / scale, work / predicted_seconds / scale});
  }

  std::vector<KernelSample>& samples() { return samples_; }

 private:
  std::vector<KernelSample> samples_;
};

// A sample that failed to run on the device says so in an "error" member.
bool Failed(const JsonNode& sample) { return sample.json().contains("error"); }

double Number(const JsonNode& sample, const std::string& key) { return sample.Child(key).AsNumber(0, 1e30); }
int64_t Int(const JsonNode& sample, const std::string& key) { return sample.Child(key).AsInt(1, int64_t{1} << 40); }

DType DTypeOf(const JsonNode& sample) {
  const JsonNode node = sample.Child("dtype");
  const std::optional<DType> dtype = ParseDType(node.AsString());
  if (!dtype) node.Fail("expected a dtype such as \"bfloat16\" or \"float8_e4m3fn\"");
  return *dtype;
}

void AddGemms(const std::string& name, const JsonNode& group, bool batched, const ClusterSpec& cluster,
              Collector& out) {
  for (const JsonNode& g : group.AsArray()) {
    if (Failed(g)) continue;
    const double seconds = Number(g, "seconds");
    if (seconds < kTimerFloorSeconds) continue;
    const GemmShape shape{Int(g, "m"), Int(g, "n"), Int(g, "k"),
                          g.json().contains("batch") ? Int(g, "batch") : int64_t{1}};
    const DType dtype = DTypeOf(g);
    const double batch = static_cast<double>(shape.batch);
    const double flops = 2.0 * batch * static_cast<double>(shape.m * shape.n) * static_cast<double>(shape.k);
    // Operands in the dtype, the output in 16 bits (bf16 for FP8 GEMMs too).
    const double bytes = batch * (static_cast<double>(DTypeBytes(dtype) * (shape.m * shape.k + shape.k * shape.n)) +
                                  2.0 * static_cast<double>(shape.m * shape.n));
    const double predicted = ComputeSeconds(flops, bytes, dtype, cluster, false, KernelShape{shape, {}, false}).seconds;
    std::string kernel = fmt::format("{}x{}x{}", shape.m, shape.n, shape.k);
    if (shape.batch > 1) kernel = fmt::format("{} x {}", shape.batch, kernel);
    if (g.json().contains("layout")) kernel += " " + g.Child("layout").AsString();
    out.Add(name, std::string(batched ? "batched GEMM " : "GEMM ") + ToString(dtype), "TFLOP/s", kernel, flops,
            predicted, seconds);
  }
}

// Fused attention in bfloat16: 4 s^2 d FLOPs per head forward, 10 backward
// (half of the pairs when causal).
void AddAttention(const std::string& name, const JsonNode& group, const std::string& what, const ClusterSpec& cluster,
                  Collector& out) {
  for (const JsonNode& a : group.AsArray()) {
    if (Failed(a)) continue;
    const bool causal = a.Child("causal").AsBool();
    const int64_t seq = Int(a, "seq"), head_dim = Int(a, "head_dim");
    const double pairs =
        Number(a, "batch") * Number(a, "heads") * std::pow(static_cast<double>(seq), 2) * (causal ? 0.5 : 1.0);
    const AttentionShape shape{seq, head_dim, causal};
    const std::string family = what + " (" + a.Child("backend").AsString() + ")";
    for (const bool backward : {false, true}) {
      const double seconds = Number(a, backward ? "backward_seconds" : "forward_seconds");
      if (seconds < kTimerFloorSeconds) continue;
      const double flops = (backward ? 10.0 : 4.0) * pairs * static_cast<double>(head_dim);
      const double predicted =
          ComputeSeconds(flops, 0, DType::kBFloat16, cluster, false, KernelShape{{}, shape, backward}).seconds;
      out.Add(name, family, "TFLOP/s",
              fmt::format("b{} h{} s{} d{}{} {}", Int(a, "batch"), Int(a, "heads"), seq, head_dim,
                          causal ? " causal" : "", backward ? "backward" : "forward"),
              flops, predicted, seconds);
    }
  }
}

// Element-wise and normalisation kernels: their bytes at the achieved bandwidth.
void AddMemoryBound(const std::string& name, const JsonNode& group, const ClusterSpec& cluster, Collector& out) {
  for (const JsonNode& k : group.AsArray()) {
    if (Failed(k)) continue;
    const double seconds = Number(k, "seconds"), bytes = Number(k, "bytes");
    if (seconds < kTimerFloorSeconds) continue;
    const DType dtype = DTypeOf(k);
    const double predicted = ComputeSeconds(0, bytes, dtype, cluster, false).seconds;
    out.Add(name, "memory-bound " + k.Child("kernel").AsString(), "GB/s",
            fmt::format("{} {}", Int(k, "elements"), ToString(dtype)), bytes, predicted, seconds);
  }
}

// A family's figures from its samples; predicted / measured - 1 of the
// times is measured / predicted - 1 of the throughputs.
KernelFamilyCheck Summarise(const std::string& family, const std::vector<const KernelSample*>& samples) {
  KernelFamilyCheck c;
  c.family = family;
  c.unit = samples.front()->unit;
  c.samples = samples.size();
  c.measured_min = c.measured_max = samples.front()->measured;
  std::vector<double> errors, signed_errors;
  for (const KernelSample* k : samples) {
    c.measured_min = std::min(c.measured_min, k->measured);
    c.measured_max = std::max(c.measured_max, k->measured);
    signed_errors.push_back(k->measured / k->predicted - 1);
    errors.push_back(std::abs(signed_errors.back()));
  }
  c.median_error = Median(errors);
  c.p90_error = Quantile(errors, 0.9);
  c.max_error = *std::max_element(errors.begin(), errors.end());
  c.median_signed_error = Median(signed_errors);
  return c;
}

}  // namespace

const KernelFamilyCheck* KernelProfileCheck::Find(const std::string& family) const {
  for (const KernelFamilyCheck& f : families)
    if (f.family == family) return &f;
  return nullptr;
}

KernelProfileCheck CheckKernelProfile(const JsonNode& measurements, const ClusterSpec& cluster) {
  const nlohmann::json& root = measurements.json();
  if (!root.is_object() || !root.contains("device") || !root["device"].is_object())
    measurements.Fail("expected the output of bench/gpu/kernels.py (an object with \"device\" and kernel groups)");
  KernelProfileCheck check;
  check.device = measurements.Child("device").Child("name").AsString();
  Collector collector;
  for (const auto& [group, value] : measurements.json().items()) {
    const JsonNode node = measurements.Child(group);
    if (group.rfind("gemm", 0) == 0)
      AddGemms(group, node, group == "gemm_batched", cluster, collector);
    else if (group == "flash_attention")
      AddAttention(group, node, "attention", cluster, collector);
    else if (group == "attention_head_sizes")
      AddAttention(group, node, "attention head sizes", cluster, collector);
    else if (group == "memory_bound")
      AddMemoryBound(group, node, cluster, collector);
  }
  if (collector.samples().empty())
    measurements.Fail(
        "no kernel of 60 us or more in any group (gemm*, flash_attention, attention_head_sizes, "
        "memory_bound)");
  check.samples = std::move(collector.samples());
  std::map<std::string, std::vector<const KernelSample*>> families;  // by name, as they are printed
  for (const KernelSample& k : check.samples) families[k.family].push_back(&k);
  for (const auto& [family, samples] : families) check.families.push_back(Summarise(family, samples));
  return check;
}

}  // namespace shardlab
