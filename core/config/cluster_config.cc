#include "core/config/cluster_config.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/config/calibration_file.h"
#include "core/config/units.h"
#include "core/util/input_file.h"
#include "core/util/json_reader.h"
#include "core/util/paths.h"
#include "core/util/quote.h"
#include "core/util/suggest.h"

namespace shardlab {
namespace {

double Quantity(ObjectReader& reader, const std::string& key, Quantity kind) {
  return ReadQuantity(reader.Required(key), kind);
}

// An object from dtype names to values (peak_flops, gemm_efficiency), each read by `value`.
template <typename ReadValue>
std::map<DType, double> ReadDTypeMap(const JsonNode& node, const std::string& values, ReadValue value) {
  ObjectReader reader(node);
  std::map<DType, double> out;
  for (const auto& item : node.json().items()) {
    const std::string& name = item.key();
    const auto entry = reader.Required(name);
    auto dtype = ParseDType(name);
    if (!dtype)
      entry.Fail(Quoted(name) + " is not a dtype" + DidYouMean(name, DTypeNames()) + "; expected dtypes mapped to " +
                 values);
    out[*dtype] = value(entry);
  }
  reader.Finish();
  return out;
}

DeviceSpec ReadDevice(const JsonNode& node) {
  ObjectReader r(node);
  DeviceSpec d;
  d.kind = r.Required("kind").AsEnum({"npu", "gpu"});
  d.model = r.Required("model").AsString();
  const auto peak = r.Required("peak_flops");
  d.peak_flops =
      ReadDTypeMap(peak, "FLOP/s", [](const JsonNode& v) { return ReadQuantity(v, Quantity::kFlopsPerSecond); });
  if (d.peak_flops.empty()) peak.Fail("expected at least one dtype, e.g. {\"float16\": \"312 TFLOP/s\"}");
  d.memory_bytes = Quantity(r, "memory", Quantity::kBytes);
  d.memory_bandwidth = Quantity(r, "memory_bandwidth", Quantity::kBytesPerSecond);
  d.compute_efficiency = r.Number("compute_efficiency", 1.0, 1e-3, 1.0);
  d.memory_efficiency = r.Number("memory_efficiency", 1.0, 1e-3, 1.0);
  d.gemm_memory_efficiency = r.Number("gemm_memory_efficiency", 0.0, 1e-3, 1.0);
  if (auto overhead = r.Optional("kernel_overhead"))
    d.kernel_overhead = ReadQuantity(*overhead, Quantity::kSeconds, true);
  d.gemm_half_size = r.Number("gemm_half_size", 0, 0, 1e9);
  d.gemm_half_depth = r.Number("gemm_half_depth", 0, 0, 1e9);
  d.compute_units = r.Int("compute_units", 0, 0, 1 << 20);
  if (auto tiles = r.Optional("gemm_tiles")) {
    for (const JsonNode& t : tiles->AsArray()) {
      const auto entries = t.AsArray();
      if (entries.size() != 3) t.Fail("expected [rows, cols, relative efficiency], e.g. [128, 256, 1.0]");
      d.gemm_tiles.push_back(
          {entries[0].AsInt(1, 1 << 16), entries[1].AsInt(1, 1 << 16), entries[2].AsNumber(1e-3, 1)});
    }
    if (d.gemm_tiles.empty()) tiles->Fail("expected at least one tile, e.g. [[128, 256, 1.0]]");
  }
  if (d.compute_units > 0 && d.gemm_tiles.empty())
    r.node().Child("compute_units").Fail("compute_units needs gemm_tiles, the tiles that run in waves");
  if (d.compute_units == 0 && !d.gemm_tiles.empty())
    r.node().Child("gemm_tiles").Fail("gemm_tiles needs compute_units, the units their waves fill");
  if (d.gemm_memory_efficiency > d.memory_efficiency)
    r.node()
        .Child("gemm_memory_efficiency")
        .Fail(
            fmt::format("gemm_memory_efficiency {} exceeds memory_efficiency {}: a GEMM streams no faster than a copy",
                        d.gemm_memory_efficiency, d.memory_efficiency));
  if (d.compute_units == 0 && d.gemm_memory_efficiency > 0)
    r.node()
        .Child("gemm_memory_efficiency")
        .Fail("gemm_memory_efficiency needs compute_units, the units whose one wave of tiles streams at it");
  if (auto by_dtype = r.Optional("gemm_efficiency"))
    d.gemm_efficiency =
        ReadDTypeMap(*by_dtype, "fractions of their peak", [](const JsonNode& v) { return v.AsNumber(1e-3, 1); });
  d.gemm_alignment = r.Int("gemm_alignment", 0, 0, 4096);
  d.misaligned_gemm_efficiency = r.Number("misaligned_gemm_efficiency", 1.0, 1e-3, 1.0);
  if (d.gemm_alignment == 0 && d.misaligned_gemm_efficiency < 1)
    r.node()
        .Child("misaligned_gemm_efficiency")
        .Fail("misaligned_gemm_efficiency needs gemm_alignment, the row size in bytes");
  if (auto attention = r.Optional("attention")) {
    ObjectReader a(*attention);
    d.attention.efficiency = a.Required("efficiency").AsNumber(1e-3, 1);
    d.attention.backward_efficiency = a.Number("backward_efficiency", d.attention.efficiency, 1e-3, 1);
    d.attention.half_length = a.Number("half_length", 0, 0, 1e9);
    d.attention.half_head_dim = a.Number("half_head_dim", 0, 0, 1e6);
    a.Finish();
  }
  if (auto cc = r.Optional("compute_capability")) {
    if (d.kind != "gpu") cc->Fail("compute_capability is a GPU's (CUDA) figure; this device is an " + d.kind);
    d.compute_capability = cc->AsNumber(3.0, 20.0);
  }
  r.Finish();
  return d;
}

HostSpec ReadHost(const JsonNode& node) {
  ObjectReader r(node);
  HostSpec h;
  h.cpu_flops = Quantity(r, "cpu_flops", Quantity::kFlopsPerSecond);
  h.memory_bytes = Quantity(r, "memory", Quantity::kBytes);
  h.memory_bandwidth = Quantity(r, "memory_bandwidth", Quantity::kBytesPerSecond);
  h.pcie_bandwidth = Quantity(r, "pcie_bandwidth", Quantity::kBytesPerSecond);
  h.pcie_latency = Quantity(r, "pcie_latency", Quantity::kSeconds);
  r.Finish();
  return h;
}

IntraServerFabric ReadIntraServer(const JsonNode& node, int64_t devices_per_server) {
  ObjectReader r(node);
  IntraServerFabric f;
  const std::string kind = r.Required("kind").AsEnum({"hccs_mesh", "nvswitch"});
  f.kind = kind == "hccs_mesh" ? IntraServerFabric::Kind::kHccsMesh : IntraServerFabric::Kind::kNvSwitch;
  f.link_bandwidth = Quantity(r, "link_bandwidth", Quantity::kBytesPerSecond);
  f.latency = Quantity(r, "latency", Quantity::kSeconds);
  if (f.kind == IntraServerFabric::Kind::kHccsMesh) {
    const auto group = r.Required("group_size");
    f.group_size = group.AsInt(1, std::min(devices_per_server, kMaxMeshGroup));
    if (devices_per_server % f.group_size != 0)
      group.Fail(fmt::format("group_size {} does not divide devices_per_server {}", f.group_size, devices_per_server));
    if (f.group_size < devices_per_server) {
      f.cross_group_bandwidth = Quantity(r, "cross_group_bandwidth", Quantity::kBytesPerSecond);
    }
  } else {
    f.group_size = devices_per_server;
    f.nvlink_links = r.Int("nvlink_links", 0, 0, 72);
  }
  r.Finish();
  return f;
}

InterServerNetwork ReadInterServer(const JsonNode& node, int64_t servers, int64_t devices_per_server) {
  ObjectReader r(node);
  InterServerNetwork n;
  n.nic_bandwidth = Quantity(r, "nic_bandwidth", Quantity::kBytesPerSecond);
  n.nics_per_server = r.Int("nics_per_server", devices_per_server, 1, devices_per_server);
  r.Required("topology").AsEnum({"fat_tree"});
  n.levels = r.Int("levels", 2, 1, 3);
  n.switch_radix = r.Int("switch_radix", 64, 4, 1024);
  n.oversubscription = r.Number("oversubscription", 1.0, 1.0, 64.0);
  n.spine_oversubscription = r.Number("spine_oversubscription", 1.0, 1.0, 64.0);
  if (n.spine_oversubscription != 1 && n.levels < 3)
    node.Child("spine_oversubscription")
        .Fail(fmt::format("a spine tier exists only in a 3-level fat tree; this one has {} level{}", n.levels,
                          n.levels == 1 ? "" : "s"));
  n.rail_optimized = r.Bool("rail_optimized", false);
  n.multi_plane = r.Bool("multi_plane", false);
  if (n.multi_plane && !n.rail_optimized)
    node.Child("multi_plane").Fail("a multi-plane network is rail-optimised (each rail a plane): set rail_optimized");
  n.link_latency = Quantity(r, "link_latency", Quantity::kSeconds);
  n.switch_latency = Quantity(r, "switch_latency", Quantity::kSeconds);
  // A multi-plane network is one tree per plane, each connecting one NIC per server.
  const int64_t nics = n.multi_plane ? servers : servers * n.nics_per_server;
  const int64_t capacity = FatTreeCapacity(n.levels, n.switch_radix);
  if (nics > capacity)
    (node.json().contains("levels") ? node.Child("levels") : node)
        .Fail(fmt::format("a {}-level fat tree of radix-{} switches connects at most {} NICs, the cluster has {}{}; "
                          "raise levels or switch_radix",
                          n.levels, n.switch_radix, capacity, nics, n.multi_plane ? " per plane" : ""));
  r.Finish();
  return n;
}

}  // namespace

int64_t FatTreeCapacity(int64_t levels, int64_t radix) {
  // A non-blocking fat tree of radix-k switches: one level k, two k^2/2, three k^3/4.
  if (levels == 1) return radix;
  if (levels == 2) return radix * radix / 2;
  return radix * radix * radix / 4;
}

const char* ToString(NetworkScope scope) {
  return scope == NetworkScope::kIntraServer ? "intra_server" : "inter_server";
}

std::optional<NetworkScope> ParseNetworkScope(const std::string& name) {
  if (name == "intra_server") return NetworkScope::kIntraServer;
  if (name == "inter_server") return NetworkScope::kInterServer;
  return std::nullopt;
}

std::vector<std::string> NetworkScopeNames() { return {"intra_server", "inter_server"}; }

const char* ToString(IntraServerFabric::Kind kind) {
  return kind == IntraServerFabric::Kind::kHccsMesh ? "hccs_mesh" : "nvswitch";
}

ClusterSpec ReadClusterSpec(const JsonNode& node) {
  ObjectReader r(node);
  ClusterSpec c;
  c.name = r.Required("name").AsString();
  c.servers = r.RequiredInt("servers", 1, kMaxClusterDevices);
  // A "server" is a scale-up domain: 8 devices in a DGX or an Atlas 800, 72 in
  // a GB200 NVL72 rack, 384 in a CloudMatrix 384 supernode.
  c.devices_per_server = r.RequiredInt("devices_per_server", 1, kMaxScaleUpDevices);
  if (c.device_count() > kMaxClusterDevices)
    node.Child("servers").Fail(fmt::format("{} servers x {} devices is {} devices; shardlab simulates up to {}",
                                           c.servers, c.devices_per_server, c.device_count(), kMaxClusterDevices));
  c.device = ReadDevice(r.Required("device"));
  c.host = ReadHost(r.Required("host"));
  c.intra_server = ReadIntraServer(r.Required("intra_server"), c.devices_per_server);
  c.inter_server = ReadInterServer(r.Required("inter_server"), c.servers, c.devices_per_server);
  if (auto calibration = r.Optional("calibration")) {
    const std::string path = ResolveRelativeTo(node.file(), calibration->AsString());
    if (const std::string problem = InputFileProblem(path); !problem.empty())
      calibration->Fail("the calibration file " + Quoted(path, 400) + " " + problem +
                        (problem == "does not exist" ? " (write one with `shardlab calibrate`)" : ""));
    ApplyCalibration(LoadCalibrationFile(path), std::filesystem::absolute(path).lexically_normal().string(), &c);
  }
  r.Finish();
  return c;
}

nlohmann::json ToJson(const ClusterSpec& c) {
  nlohmann::json peak = nlohmann::json::object();
  for (const auto& [dtype, flops] : c.device.peak_flops) peak[ToString(dtype)] = flops;
  nlohmann::json intra = {{"kind", ToString(c.intra_server.kind)},
                          {"link_bandwidth", c.intra_server.link_bandwidth},
                          {"latency", c.intra_server.latency}};
  if (c.intra_server.nvlink_links > 0) intra["nvlink_links"] = c.intra_server.nvlink_links;
  if (c.intra_server.kind == IntraServerFabric::Kind::kHccsMesh) {
    intra["group_size"] = c.intra_server.group_size;
    if (c.intra_server.group_size < c.devices_per_server)
      intra["cross_group_bandwidth"] = c.intra_server.cross_group_bandwidth;
  }
  const auto& n = c.inter_server;
  nlohmann::json tiles = nlohmann::json::array();
  for (const GemmTile& t : c.device.gemm_tiles) tiles.push_back({t.rows, t.cols, t.efficiency});
  nlohmann::json out = {
      {"name", c.name},
      {"servers", c.servers},
      {"devices_per_server", c.devices_per_server},
      {"device",
       {{"kind", c.device.kind},
        {"model", c.device.model},
        {"peak_flops", peak},
        {"memory", c.device.memory_bytes},
        {"memory_bandwidth", c.device.memory_bandwidth},
        {"compute_efficiency", c.device.compute_efficiency},
        {"memory_efficiency", c.device.memory_efficiency},
        {"kernel_overhead", c.device.kernel_overhead},
        {"gemm_half_size", c.device.gemm_half_size},
        {"gemm_half_depth", c.device.gemm_half_depth},
        {"compute_units", c.device.compute_units},
        {"gemm_alignment", c.device.gemm_alignment},
        {"misaligned_gemm_efficiency", c.device.misaligned_gemm_efficiency}}},
      {"host",
       {{"cpu_flops", c.host.cpu_flops},
        {"memory", c.host.memory_bytes},
        {"memory_bandwidth", c.host.memory_bandwidth},
        {"pcie_bandwidth", c.host.pcie_bandwidth},
        {"pcie_latency", c.host.pcie_latency}}},
      {"intra_server", intra},
      {"inter_server",
       {{"nic_bandwidth", n.nic_bandwidth},
        {"nics_per_server", n.nics_per_server},
        {"topology", "fat_tree"},
        {"levels", n.levels},
        {"switch_radix", n.switch_radix},
        {"oversubscription", n.oversubscription},
        {"spine_oversubscription", n.spine_oversubscription},
        {"rail_optimized", n.rail_optimized},
        {"multi_plane", n.multi_plane},
        {"link_latency", n.link_latency},
        {"switch_latency", n.switch_latency}}},
  };
  if (!tiles.empty()) out["device"]["gemm_tiles"] = tiles;
  for (const auto& [dtype, efficiency] : c.device.gemm_efficiency)
    out["device"]["gemm_efficiency"][ToString(dtype)] = efficiency;
  if (c.device.compute_capability > 0) out["device"]["compute_capability"] = c.device.compute_capability;
  if (c.device.gemm_memory_efficiency > 0) out["device"]["gemm_memory_efficiency"] = c.device.gemm_memory_efficiency;
  if (c.device.attention.efficiency > 0)
    out["device"]["attention"] = {{"efficiency", c.device.attention.efficiency},
                                  {"backward_efficiency", c.device.attention.backward_efficiency},
                                  {"half_length", c.device.attention.half_length},
                                  {"half_head_dim", c.device.attention.half_head_dim}};
  if (!c.calibration_file.empty()) out["calibration"] = c.calibration_file;
  return out;
}

}  // namespace shardlab
