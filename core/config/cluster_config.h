// A cluster: its devices (Ascend NPUs or GPUs), their host, how many servers
// of how many devices, the fabric inside a server (HCCS groups or NVSwitch) and
// the network between servers (per-device NICs on a fat tree).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/comm/collective.h"
#include "core/graph/dtype.h"

namespace shardlab {

class JsonNode;

// One output tile shape of the GEMM library (cuBLAS picks per shape among a
// few), with its throughput relative to the best tile's.
struct GemmTile {
  int64_t rows = 128, cols = 128;
  double efficiency = 1;

  bool operator==(const GemmTile&) const = default;
};

// Fused attention (FlashAttentionScore) reaches efficiency / (1 + half_length
// / kv + half_head_dim / head_dim) of the dtype's peak, kv the keys each query
// sees on average (half the sequence under a causal mask): short sequences
// and narrow heads leave the tensor cores waiting on softmax and loads.
// efficiency 0: attention runs as any other operator at compute_efficiency.
struct AttentionProfile {
  double efficiency = 0;
  double backward_efficiency = 0;
  double half_length = 0;
  double half_head_dim = 0;

  bool operator==(const AttentionProfile&) const = default;
};

struct DeviceSpec {
  std::string kind;  // "npu" or "gpu"
  std::string model;
  std::map<DType, double> peak_flops;  // FLOP/s per compute dtype
  double memory_bytes = 0;
  double memory_bandwidth = 0;    // bytes/s
  double compute_efficiency = 1;  // achieved fraction of peak on large GEMMs
  double memory_efficiency = 1;   // achieved fraction of memory bandwidth
  // The fraction of memory bandwidth at which a GEMM whose tiles fill at
  // most one wave of compute_units streams its operands, w waves w times
  // that up to memory_efficiency: the floor under a thin product's time
  // (16-256 rows against an 8192 x 8192 weight read it at 2.0-2.2 TB/s on an
  // H100, a copy at 2.9). 0: memory_efficiency.
  double gemm_memory_efficiency = 0;
  double kernel_overhead = 0;     // seconds of launch and dispatch per operator
  // A GEMM C[m,n] = A[m,k] B[k,n] reaches compute_efficiency / (1 +
  // gemm_half_size (1/m + 1/n) + gemm_half_depth / k) of peak before tile
  // waves: thin outputs leave the tensor cores waiting on loads, and each
  // output tile pays a fixed prologue and epilogue against its k-loop (0: no
  // shape effect). Fitted by calibration. m and n count here as at least the
  // smallest tile's edge: the tile waves already charge a thinner output for
  // the tile's empty rows.
  double gemm_half_size = 0;
  double gemm_half_depth = 0;
  // Streaming multiprocessors or AI cores: the output tiles of a GEMM run in
  // waves of compute_units, the last wave partly idle (0: no waves).
  int64_t compute_units = 0;
  std::vector<GemmTile> gemm_tiles;  // the tiles the GEMM library picks from
  // Operand rows that are not a multiple of gemm_alignment bytes (TMA's 16 on
  // Hopper) fall off the tensor-core fast path to misaligned_gemm_efficiency
  // of it (0: no alignment rule).
  int64_t gemm_alignment = 0;
  double misaligned_gemm_efficiency = 1;
  // GEMMs in these dtypes start from their own efficiency instead of
  // compute_efficiency (FP8 tensor cores reach a smaller share of their peak).
  std::map<DType, double> gemm_efficiency;
  AttentionProfile attention;
  // GPUs: the CUDA compute capability (8.0 A100, 9.0 H100, 10.0 B200), which
  // picks NCCL's per-architecture tuning tables and NVLink speed (0: not
  // modelled as NCCL runs it).
  double compute_capability = 0;

  bool operator==(const DeviceSpec&) const = default;
};

struct HostSpec {
  double cpu_flops = 0;  // FLOP/s of the host CPUs together
  double memory_bytes = 0;
  double memory_bandwidth = 0;
  double pcie_bandwidth = 0;  // host <-> one device, bytes/s each way
  double pcie_latency = 0;

  bool operator==(const HostSpec&) const = default;
};

struct IntraServerFabric {
  enum class Kind { kHccsMesh, kNvSwitch };
  Kind kind = Kind::kNvSwitch;
  int64_t group_size = 0;            // HCCS: devices per full-mesh group
  double link_bandwidth = 0;         // HCCS: per link; NVSwitch: per device, each way
  double cross_group_bandwidth = 0;  // HCCS: between the groups of a server (PCIe through the CPUs)
  double latency = 0;
  int64_t nvlink_links = 0;  // NVSwitch: NVLinks per GPU, as NCCL's topology counts them (0: unknown)

  bool operator==(const IntraServerFabric&) const = default;
};

struct InterServerNetwork {
  double nic_bandwidth = 0;  // per NIC, each way
  int64_t nics_per_server = 1;
  int64_t levels = 2;  // fat-tree switch levels
  int64_t switch_radix = 64;
  double oversubscription = 1;  // downlink:uplink ratio at the leaf switches
  // downlink:uplink ratio at the spine switches of a three-level tree (the
  // pods' uplinks to the core); 1 on two levels.
  double spine_oversubscription = 1;
  bool rail_optimized = false;  // NIC i of every server on leaf switch group i
  // Rail-optimised, and each rail is its own network (plane): a fat tree per
  // NIC index with no switch between planes, so traffic to another plane's
  // NIC crosses the source server's fabric to the device on that plane first
  // (as NCCL's PXN forwards it).
  bool multi_plane = false;
  double link_latency = 0;
  double switch_latency = 0;

  bool operator==(const InterServerNetwork&) const = default;
};

// A collective's own link figures, fitted from measurements by calibration:
// per-device bandwidth and per-step latency that make the collective's
// closed form reproduce what was measured, and the least time it took at
// all (small messages on a busy host wait for the scheduler).
// Which links a collective's group uses: a server's own fabric, or the
// network between servers.
enum class NetworkScope {
  kIntraServer,  // "intra_server"
  kInterServer,  // "inter_server"
};
const char* ToString(NetworkScope scope);
std::optional<NetworkScope> ParseNetworkScope(const std::string& name);
std::vector<std::string> NetworkScopeNames();

struct CalibratedLink {
  double bandwidth = 0;
  double latency = 0;
  double floor = 0;  // seconds; the closed form's time is raised to it
  bool operator==(const CalibratedLink&) const = default;
};

// The most devices a cluster may have.
inline constexpr int64_t kMaxClusterDevices = 131072;
// Devices in one scale-up domain (a "server": one NVSwitch/UB fabric or HCCS
// meshes), and in one HCCS full mesh (every pair linked).
inline constexpr int64_t kMaxScaleUpDevices = 1024;
inline constexpr int64_t kMaxMeshGroup = 64;

struct ClusterSpec {
  std::string name;
  DeviceSpec device;
  HostSpec host;
  int64_t servers = 1;
  int64_t devices_per_server = 1;
  IntraServerFabric intra_server;
  InterServerNetwork inter_server;
  // From a calibration file: a collective's link in one scope; absent: the fabric's.
  std::map<std::pair<Collective, NetworkScope>, CalibratedLink> calibrated_links;
  std::string calibration_file;  // the calibration applied, "" = none

  int64_t device_count() const { return servers * devices_per_server; }
  bool operator==(const ClusterSpec&) const = default;
};

const char* ToString(IntraServerFabric::Kind kind);

// Reads and validates a cluster object (a cluster file, or inline in a run).
ClusterSpec ReadClusterSpec(const JsonNode& node);
nlohmann::json ToJson(const ClusterSpec& cluster);

// The most NICs a fat tree of `levels` levels of radix-`radix` switches connects.
int64_t FatTreeCapacity(int64_t levels, int64_t radix);

}  // namespace shardlab
