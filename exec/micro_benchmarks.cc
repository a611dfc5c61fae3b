#include "exec/micro_benchmarks.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <unistd.h>

#include <Eigen/Core>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/util/progress_report.h"
#include "core/util/statistics.h"

#ifdef SHARDLAB_HAVE_NCCL
#include "exec/gpu_backend.h"
#endif

namespace shardlab::exec {
namespace {

// Elements of `size` bytes, and the per-rank count the call takes.
size_t CountFor(Collective op, double size, int n) {
  const size_t elements = ElementsFor(size);
  switch (op) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return std::max<size_t>(1, elements / static_cast<size_t>(n));
    default:
      return elements;
  }
}

void RunCollective(Communicator& comm, Collective op, float* in, float* out, size_t count) {
  switch (op) {
    case Collective::kAllReduce:
      comm.AllReduce(in, count);
      break;
    case Collective::kAllGather:
      comm.AllGather(in, out, count);
      break;
    case Collective::kReduceScatter:
      comm.ReduceScatter(in, out, count);
      break;
    case Collective::kAllToAll:
      comm.AllToAll(in, out, count);
      break;
    case Collective::kBroadcast:
      comm.Broadcast(in, count, 0);
      break;
    case Collective::kSendRecv:
      break;
  }
}

// Times work() on the compute stream once, after a barrier.
template <typename Work>
double TimeOnce(RankContext& c, Work work) {
  c.world.Barrier();
  c.runtime.ResetEvents();
  const auto begin = c.runtime.Record(Stream::kCompute);
  work();
  const auto end = c.runtime.Record(Stream::kCompute);
  c.runtime.Synchronize();
  return c.runtime.Elapsed(begin, end);
}

std::string AlgorithmOf(const std::string& backend, Collective op) {
  if (backend == "nccl") return "auto";
  if (op == Collective::kAllToAll) return "pairwise";
  if (op == Collective::kBroadcast) return "direct";
  return "ring";
}

}  // namespace

std::string CollectiveBenchRank(RankContext& c, const CollectiveBenchOptions& options) {
  double largest = 1;
  for (double s : options.sizes) largest = std::max(largest, s);
  c.runtime.Reserve(Stream::kCompute, ElementsFor(largest) + static_cast<size_t>(c.size));
  float* in = c.runtime.Input(Stream::kCompute);
  float* out = c.runtime.Output(Stream::kCompute);
  nlohmann::json times = nlohmann::json::array();
  const double cases = static_cast<double>(options.ops.size() * options.sizes.size());
  double done = 0;
  for (Collective op : options.ops) {
    nlohmann::json per_size = nlohmann::json::array();
    for (double size : options.sizes) {
      const size_t count = CountFor(op, size, c.size);
      std::vector<double> t;
      for (int i = 0; i < options.warmup + options.repeats; ++i) {
        const double seconds = TimeOnce(c, [&] {
          c.runtime.Submit(Stream::kCompute, [&c, op, in, out, count] { RunCollective(c.world, op, in, out, count); });
        });
        if (i >= options.warmup) t.push_back(seconds);
      }
      per_size.push_back(t);
      ReportProgress(++done, cases);
    }
    times.push_back(per_size);
  }
  return times.dump();
}

std::vector<CollectiveSample> CombineCollectiveBench(const CollectiveBenchOptions& options, const std::string& backend,
                                                     const std::vector<std::string>& rank_outputs) {
  std::vector<nlohmann::json> ranks;
  for (const std::string& s : rank_outputs) ranks.push_back(nlohmann::json::parse(s));
  std::vector<CollectiveSample> samples;
  for (size_t o = 0; o < options.ops.size(); ++o)
    for (size_t z = 0; z < options.sizes.size(); ++z) {
      std::vector<double> slowest(static_cast<size_t>(options.repeats), 0);
      for (const auto& r : ranks) {
        const auto t = r[o][z].get<std::vector<double>>();
        for (size_t i = 0; i < t.size() && i < slowest.size(); ++i) slowest[i] = std::max(slowest[i], t[i]);
      }
      CollectiveSample s;
      s.op = options.ops[o];
      s.algorithm = AlgorithmOf(backend, s.op);
      s.ranks = static_cast<int>(ranks.size());
      s.size = static_cast<double>(CountFor(s.op, options.sizes[z], s.ranks)) * 4 *
               (s.op == Collective::kAllReduce || s.op == Collective::kBroadcast ? 1 : s.ranks);
      s.seconds = Median(slowest);
      s.min_seconds = *std::min_element(slowest.begin(), slowest.end());
      s.max_seconds = *std::max_element(slowest.begin(), slowest.end());
      samples.push_back(s);
    }
  return samples;
}

GemmBenchOptions DefaultGemmBench(const std::string& runtime) {
  GemmBenchOptions o;
  const bool cuda = runtime == "cuda";
  for (int64_t s = cuda ? 256 : 32; s <= (cuda ? 16384 : 1024); s *= 2) o.shapes.push_back({s, s, s});
  // Transformer layers: tokens x hidden products with the hidden and FFN widths.
  const int64_t tokens = cuda ? 8192 : 1024;
  for (int64_t h : cuda ? std::vector<int64_t>{1024, 4096, 8192} : std::vector<int64_t>{128, 256, 512}) {
    o.shapes.push_back({tokens, h, h});
    o.shapes.push_back({tokens, 4 * h, h});
    o.shapes.push_back({tokens, h, 4 * h});
  }
  for (double b = cuda ? 16.0 * (1 << 20) : 1 << 20; b <= (cuda ? 4.0 * (1 << 30) : 128.0 * (1 << 20)); b *= 4)
    o.copy_sizes.push_back(b);
  if (cuda) o.burst = 10;
  return o;
}

std::string GemmBenchRank(RankContext& c, const GemmBenchOptions& options) {
  nlohmann::json gemms = nlohmann::json::array(), copies = nlohmann::json::array();
  const int burst = std::max(1, options.burst);
  auto measure = [&](auto work) {
    std::vector<double> t;
    for (int i = 0; i < options.warmup + options.repeats; ++i) {
      const double seconds = TimeOnce(c, [&] {
        for (int b = 0; b < burst; ++b) work();
      });
      if (i >= options.warmup) t.push_back(seconds / burst);
    }
    return Median(t);
  };
  const double cases = static_cast<double>(options.shapes.size() + options.copy_sizes.size());
  double done = 0;
  for (const GemmShape& g : options.shapes) {
    gemms.push_back(measure([&] { c.runtime.Gemm(Stream::kCompute, g.m, g.n, g.k); }));
    ReportProgress(++done, cases);
  }
  for (double bytes : options.copy_sizes) {
    copies.push_back(measure([&] { c.runtime.MemoryPass(Stream::kCompute, bytes); }));
    ReportProgress(++done, cases);
  }
  return nlohmann::json{{"gemm", gemms}, {"copy", copies}}.dump();
}

GemmBenchResult CombineGemmBench(const GemmBenchOptions& options, const std::vector<std::string>& rank_outputs) {
  GemmBenchResult result;
  for (const GemmShape& g : options.shapes) result.gemms.push_back({g, 0});
  for (double b : options.copy_sizes) result.copies.push_back({b, 0});
  for (const std::string& s : rank_outputs) {
    const auto j = nlohmann::json::parse(s);
    for (size_t i = 0; i < result.gemms.size(); ++i)
      result.gemms[i].seconds = std::max(result.gemms[i].seconds, j["gemm"][i].get<double>());
    for (size_t i = 0; i < result.copies.size(); ++i)
      result.copies[i].seconds = std::max(result.copies[i].seconds, j["copy"][i].get<double>());
  }
  return result;
}

MeasurementContext DescribeRanks(const LaunchOptions& launch, const std::string& device) {
  return {launch.backend, launch.backend == "nccl" ? "cuda" : "cpu", device, launch.ranks};
}

nlohmann::json SoftwareVersions(const std::string& backend) {
  nlohmann::json v = {
      {"shardlab", "0.1.0"},
      {"compiler", __VERSION__},
      {"eigen", fmt::format("{}.{}.{}", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION)}};
#ifdef SHARDLAB_GLOO_VERSION
  v["gloo"] = SHARDLAB_GLOO_VERSION;
#endif
#ifdef SHARDLAB_HAVE_NCCL
  if (backend == "nccl")
    for (const auto& [name, version] : LoadGpuBackend().versions()) v[name] = version;
#endif
  return v;
}

std::string HostName() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

namespace {
nlohmann::json Header(const MeasurementContext& c, const std::string& kind) {
  return {{"format", "shardlab-measurements"},
          {"version", 1},
          {"kind", kind},
          {"backend", c.backend},
          {"runtime", c.runtime},
          {"device", c.device},
          {"ranks", c.ranks},
          {"hostname", HostName()},
          {"date", UtcNow()},
          {"software", SoftwareVersions(c.backend)}};
}
}  // namespace

nlohmann::json CollectiveMeasurements(const MeasurementContext& context, const std::vector<CollectiveSample>& samples) {
  nlohmann::json j = Header(context, "collectives");
  j["samples"] = nlohmann::json::array();
  for (const CollectiveSample& s : samples)
    j["samples"].push_back({{"op", ToString(s.op)},
                            {"algorithm", s.algorithm},
                            {"scope", s.scope},
                            {"ranks", s.ranks},
                            {"size", s.size},
                            {"seconds", s.seconds},
                            {"min_seconds", s.min_seconds},
                            {"max_seconds", s.max_seconds}});
  return j;
}

nlohmann::json GemmMeasurements(const MeasurementContext& context, const GemmBenchResult& result) {
  nlohmann::json j = Header(context, "gemm");
  j["dtype"] = context.runtime == "cuda" ? "bfloat16" : "float32";
  j["samples"] = nlohmann::json::array();
  for (const GemmSample& g : result.gemms)
    j["samples"].push_back({{"m", g.shape.m}, {"n", g.shape.n}, {"k", g.shape.k}, {"seconds", g.seconds}});
  j["copies"] = nlohmann::json::array();
  for (const CopySample& c : result.copies) j["copies"].push_back({{"bytes", c.bytes}, {"seconds", c.seconds}});
  return j;
}

}  // namespace shardlab::exec
