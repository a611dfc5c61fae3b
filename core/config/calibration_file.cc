#include "core/config/calibration_file.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "core/config/units.h"
#include "core/graph/dtype.h"
#include "core/util/json_reader.h"
#include "core/util/quote.h"

namespace shardlab {
namespace {

constexpr double kMax = std::numeric_limits<double>::max();

nlohmann::json ToJson(const FitQuality& q) {
  return {{"samples", q.samples},
          {"rms_relative_residual", q.rms_relative_residual},
          {"max_relative_residual", q.max_relative_residual},
          {"outliers", q.outliers}};
}

FitQuality ReadQuality(const JsonNode& node) {
  ObjectReader r(node);
  FitQuality q;
  q.samples = static_cast<int>(r.RequiredInt("samples", 0, 1 << 30));
  q.rms_relative_residual = r.Required("rms_relative_residual").AsNumber(0, kMax);
  q.max_relative_residual = r.Required("max_relative_residual").AsNumber(0, kMax);
  q.outliers = static_cast<int>(r.Int("outliers", 0, 0, 1 << 30));
  r.Finish();
  return q;
}

// A fitted figure in base units: 0 where the fit has none (unless
// `zero_allowed` is false), else within the plausible range of its kind.
double ReadFitted(const JsonNode& node, Quantity kind, bool zero_allowed = true) {
  const auto [low, high] = PlausibleRange(kind);
  const double v = node.AsNumber(0, high);
  if (v < low && (v != 0 || !zero_allowed))
    node.Fail(fmt::format("expected {}a value in [{:g}, {:g}] {}, got {:g}", zero_allowed ? "0 (not fitted) or " : "",
                          low, high, BaseUnit(kind), v));
  return v;
}

// Whether a fit spans a server's HCCS meshes (measured the path between them).
bool SpansMeshes(const CollectiveFit& f, const ClusterSpec& cluster) {
  return f.scope == NetworkScope::kIntraServer && cluster.intra_server.kind == IntraServerFabric::Kind::kHccsMesh &&
         f.ranks > cluster.intra_server.group_size;
}

// Whether a fit measured HCCL's full mesh: named so, or HCCL's own choice
// ("auto") of more than 2 ranks inside one HCCS mesh group, where HCCL runs
// nothing else (its HCCL_ALGO accepts no intra-server algorithm; the rule
// of MeshServerLevel in core/cost/collective_cost.h).
bool MeasuredFullMesh(const CollectiveFit& f, const ClusterSpec& cluster) {
  if (f.algorithm == "full_mesh") return true;
  return f.algorithm == "auto" && f.scope == NetworkScope::kIntraServer && cluster.device.kind == "npu" &&
         cluster.intra_server.kind == IntraServerFabric::Kind::kHccsMesh && f.ranks > 2 && !SpansMeshes(f, cluster);
}

}  // namespace

std::vector<std::string> CalibratedCollectiveNames() {
  std::vector<std::string> names = CollectiveNames();
  names.pop_back();  // sendrecv
  return names;
}

nlohmann::json ToJson(const Calibration& c) {
  nlohmann::json j = {{"format", "shardlab-calibration"},
                      {"version", c.version},
                      {"created", c.created},
                      {"hardware", c.hardware},
                      {"software", c.software}};
  j["collectives"] = nlohmann::json::array();
  for (const CollectiveFit& f : c.collectives)
    j["collectives"].push_back({{"op", ToString(f.op)},
                                {"algorithm", f.algorithm},
                                {"scope", ToString(f.scope)},
                                {"ranks", f.ranks},
                                {"latency", f.latency},
                                {"seconds_per_byte", f.seconds_per_byte},
                                {"link_bandwidth", f.link.bandwidth},
                                {"link_latency", f.link.latency},
                                {"floor", f.link.floor},
                                {"fit", ToJson(f.quality)},
                                {"fit_1MiB_and_more", ToJson(f.large)}});
  if (c.gemm)
    j["gemm"] = {{"dtype", c.gemm->dtype},         {"peak_flops", c.gemm->peak_flops},
                 {"half_size", c.gemm->half_size}, {"half_depth", c.gemm->half_depth},
                 {"overhead", c.gemm->overhead},   {"fit", ToJson(c.gemm->quality)}};
  if (c.copy)
    j["memory"] = {{"bandwidth", c.copy->bandwidth}, {"overhead", c.copy->overhead}, {"fit", ToJson(c.copy->quality)}};
  return j;
}

Calibration ReadCalibration(const JsonNode& node) {
  ObjectReader r(node);
  r.RequireFormat("shardlab-calibration", "a file written by `shardlab calibrate`");
  Calibration c;
  c.version = static_cast<int>(r.RequiredInt("version", 1, 1));
  c.created = r.String("created", "");
  if (auto h = r.Optional("hardware")) c.hardware = h->json();
  if (auto s = r.Optional("software")) c.software = s->json();
  if (auto list = r.Optional("collectives"))
    for (const JsonNode& e : list->AsArray()) {
      ObjectReader er(e);
      CollectiveFit f;
      f.op = ParseCollective(er.Required("op").AsEnum(CalibratedCollectiveNames()));
      f.algorithm = er.Required("algorithm").AsString();
      f.scope = *ParseNetworkScope(er.Required("scope").AsEnum(NetworkScopeNames()));
      f.ranks = static_cast<int>(er.RequiredInt("ranks", 1, 4096));
      f.latency = ReadFitted(er.Required("latency"), Quantity::kSeconds);
      // At most a second per byte: the slowest plausible rate, 1 B/s.
      f.seconds_per_byte = er.Required("seconds_per_byte").AsNumber(0, 1);
      f.link.bandwidth = ReadFitted(er.Required("link_bandwidth"), Quantity::kBytesPerSecond);
      f.link.latency = ReadFitted(er.Required("link_latency"), Quantity::kSeconds);
      if (auto floor = er.Optional("floor")) f.link.floor = ReadFitted(*floor, Quantity::kSeconds);
      f.quality = ReadQuality(er.Required("fit"));
      if (auto large = er.Optional("fit_1MiB_and_more")) f.large = ReadQuality(*large);
      er.Finish();
      c.collectives.push_back(f);
    }
  if (auto g = r.Optional("gemm")) {
    ObjectReader gr(*g);
    GemmFit f;
    f.dtype = gr.Required("dtype").AsString();
    if (!ParseDType(f.dtype)) g->Child("dtype").Fail(Quoted(f.dtype) + " is not a dtype");
    f.peak_flops = ReadFitted(gr.Required("peak_flops"), Quantity::kFlopsPerSecond, false);
    f.half_size = gr.Required("half_size").AsNumber(0, PlausibleRange(Quantity::kBytes).second);
    if (auto depth = gr.Optional("half_depth"))
      f.half_depth = depth->AsNumber(0, PlausibleRange(Quantity::kBytes).second);
    f.overhead = ReadFitted(gr.Required("overhead"), Quantity::kSeconds);
    f.quality = ReadQuality(gr.Required("fit"));
    gr.Finish();
    c.gemm = f;
  }
  if (auto m = r.Optional("memory")) {
    ObjectReader mr(*m);
    CopyFit f;
    f.bandwidth = ReadFitted(mr.Required("bandwidth"), Quantity::kBytesPerSecond, false);
    f.overhead = ReadFitted(mr.Required("overhead"), Quantity::kSeconds);
    f.quality = ReadQuality(mr.Required("fit"));
    mr.Finish();
    c.copy = f;
  }
  r.Finish();
  return c;
}

Calibration LoadCalibrationFile(const std::string& path) {
  const nlohmann::json j = ReadJsonFile(path);
  return ReadCalibration(JsonNode(j, path));
}

CalibratedLink LinkOfFit(const CollectiveFit& f, bool full_mesh) {
  CalibratedLink link{0, 0, f.link.floor};
  if (f.ranks < 2 || f.seconds_per_byte <= 0) return link;
  const double n = f.ranks;
  double steps = n - 1, factor = (n - 1) / n;  // ReduceScatter, AllToAll
  switch (f.op) {
    case Collective::kAllReduce:
      steps = full_mesh ? 2 : 2 * (n - 1);
      factor = full_mesh ? 2 / n : 2 * (n - 1) / n;
      break;
    case Collective::kAllGather:  // the size is a rank's input
      steps = full_mesh ? 1 : n - 1;
      factor = full_mesh ? 1 : n - 1;
      break;
    case Collective::kBroadcast:
      steps = full_mesh ? 2 : n - 1;
      factor = full_mesh ? 2 / (n - 1) : 1;
      break;
    default:
      if (full_mesh) steps = 1, factor = 1 / n;
      break;
  }
  link.bandwidth = factor / f.seconds_per_byte;
  link.latency = f.latency / steps;
  return link;
}

void ApplyCalibration(const Calibration& c, const std::string& source, ClusterSpec* cluster) {
  cluster->calibration_file = source;
  DeviceSpec& d = cluster->device;
  if (c.gemm) {
    const DType dtype = *ParseDType(c.gemm->dtype);
    // Fused attention keeps its absolute rate: its efficiencies were
    // fractions of the peak the fit replaces.
    if (auto old = d.peak_flops.find(dtype); old != d.peak_flops.end() && d.attention.efficiency > 0) {
      const double scale = old->second / c.gemm->peak_flops;
      d.attention.efficiency = std::min(1.0, d.attention.efficiency * scale);
      d.attention.backward_efficiency = std::min(1.0, d.attention.backward_efficiency * scale);
    }
    d.peak_flops[dtype] = c.gemm->peak_flops;
    d.compute_efficiency = 1;
    d.gemm_efficiency.erase(dtype);  // the fitted peak is what GEMMs of that dtype reach
    d.gemm_half_size = c.gemm->half_size;
    d.gemm_half_depth = c.gemm->half_depth;
    d.kernel_overhead = c.gemm->overhead;
  }
  if (c.copy) {
    // gemm_memory_efficiency keeps its absolute rate: a fraction of the
    // bandwidth the measured copy rate replaces.
    if (d.gemm_memory_efficiency > 0)
      d.gemm_memory_efficiency = std::min(1.0, d.gemm_memory_efficiency * d.memory_bandwidth / c.copy->bandwidth);
    d.memory_bandwidth = c.copy->bandwidth;
    d.memory_efficiency = 1;
  }
  // The largest group measured for each collective and scope; on HCCS
  // meshes, inside a server, the largest inside one mesh where one was
  // measured (its links time the closed forms), and apart the largest
  // across meshes (the path between them).
  using Key = std::pair<Collective, NetworkScope>;
  std::map<Key, std::pair<const CollectiveFit*, CalibratedLink>> chosen, across;
  for (const CollectiveFit& f : c.collectives) {
    const CalibratedLink link = LinkOfFit(f, MeasuredFullMesh(f, *cluster));
    if (link.bandwidth <= 0) continue;
    auto& best = (SpansMeshes(f, *cluster) ? across : chosen)[{f.op, f.scope}];
    if (!best.first || f.ranks > best.first->ranks) best = {&f, link};
  }
  for (const auto& [key, fit] : across) {
    if (!chosen.count(key)) chosen[key] = fit;
    if (key.first == Collective::kAllReduce) cluster->intra_server.cross_group_bandwidth = fit.second.bandwidth;
  }
  for (const auto& [key, fit] : chosen) {
    const auto& [f, link] = fit;
    cluster->calibrated_links[key] = link;
    if (f->op != Collective::kAllReduce) continue;
    if (f->scope == NetworkScope::kIntraServer) {
      IntraServerFabric& intra = cluster->intra_server;
      if (!SpansMeshes(*f, *cluster)) intra.link_bandwidth = link.bandwidth;
      intra.latency = link.latency;
    } else {
      InterServerNetwork& n = cluster->inter_server;
      n.nic_bandwidth =
          link.bandwidth * static_cast<double>(cluster->devices_per_server) / static_cast<double>(n.nics_per_server);
      n.link_latency = link.latency / 2;
      n.switch_latency = 0;
    }
  }
}

}  // namespace shardlab
