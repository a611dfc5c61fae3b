// Closed-form times of collectives on a cluster: where a group's ranks sit
// (one server, one HCCS group, several servers and how many per server), the
// per-device bandwidth and per-step latency of the links the algorithm uses,
// the algorithm the vendor library would pick, and its alpha-beta time.
// The analytical engine and the `time` cost model use these; the SimGrid
// engine expands the same algorithms into flows.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/comm/collective.h"
#include "core/config/cluster_config.h"

namespace shardlab {

// Where a group's ranks are.
struct GroupPlacement {
  int64_t size = 1;
  int64_t servers = 1;         // distinct servers
  int64_t per_server = 1;      // ranks per server (groups are regular)
  bool one_hccs_group = true;  // all ranks of a server inside one HCCS mesh group
  int64_t leaves = 1;          // leaf switches the servers hang from
  int64_t pods = 1;            // pods (spine groups) those leaves belong to, in a 3-level tree
};

GroupPlacement PlaceGroup(const std::vector<int64_t>& ranks, const ClusterSpec& cluster);
// Whether HCCL runs the group's members on each server as a full mesh: an
// NPU cluster whose servers are HCCS full meshes, each server's members (more
// than two) inside one mesh group. HCCL picks its intra-server algorithm
// (Mesh, Ring, Double-Ring, Star) from the hardware topology and takes no
// setting for it (CANN's HCCL user guide, "Collective Communication
// Algorithms"; HCCL_ALGO's level0 accepts only NA).
bool MeshServerLevel(const GroupPlacement& p, const ClusterSpec& cluster);
// A regular group described by its size and the stride between members.
GroupPlacement PlaceStridedGroup(int64_t first_rank, int64_t size, int64_t stride, const ClusterSpec& cluster);

struct Link {
  double bandwidth = 0;  // bytes/s per device, each way
  double latency = 0;    // seconds per algorithm step
};

// The links a collective uses; a calibrated link of collective `c` replaces the fabric's.
Link IntraServerLink(const GroupPlacement& p, const ClusterSpec& cluster, Collective c = Collective::kSendRecv);
Link InterServerLink(const GroupPlacement& p, const ClusterSpec& cluster, Collective c = Collective::kSendRecv);

// How the collective library's own model times a collective beyond the
// links' alpha-beta (NCCL on GPU clusters; nccl_model.h): the SimGrid engine
// expands the algorithm's flows over its channels' links, each byte weighing
// wire_factor bytes (the library's bandwidth and pipeline fill against the
// links'), and takes the library's latency once, so that on an idle network
// it reproduces `seconds` and under load the links' contention adds.
struct LibraryTiming {
  bool timed = false;  // false: the links' alpha-beta, step latencies in the flows
  Protocol protocol = Protocol::kSimple;
  double wire_factor = 1;
  double latency = 0;  // seconds
  // HCCL on servers whose members share one HCCS full mesh: a hierarchical
  // collective's server level runs as a full mesh (every member exchanges
  // with each peer over its own link), not as a ring (MeshServerLevel).
  bool mesh_server_level = false;

  bool operator==(const LibraryTiming&) const = default;
};

struct CollectiveTiming {
  double seconds = 0;
  LibraryTiming library;
  // The share of the device's compute units the library's kernel holds while
  // it runs (NCCL: one SM per channel, NcclEstimate::channels over
  // DeviceSpec::compute_units): compute beside it runs at 1 - this. 0 where
  // DMA engines move the data (HCCL on Ascend, transfers without NCCL's model).
  double compute_share = 0;
};

// `bytes`: the buffer each rank contributes (AllReduce, ReduceScatter,
// AllToAll, Broadcast, SendRecv) or receives from each peer (AllGather: its
// own input slice). `crossing_share` (AllToAll): the share of the uniform
// exchange's server-crossing bytes that cross; below 1 the exchange is a
// flex expert dispatch (FlexCrossingShare), each server's share forwarded
// over its own links.
// The share of the device's compute units `sms` of them are (CollectiveTiming::compute_share); 0 where the
// cluster names no compute units.
double ComputeShare(int sms, const ClusterSpec& cluster);

CollectiveTiming TimeCollective(Collective c, CollectiveAlgorithm a, double bytes, const GroupPlacement& p,
                                const ClusterSpec& cluster, double crossing_share = 1);
double CollectiveSeconds(Collective c, CollectiveAlgorithm a, double bytes, const GroupPlacement& p,
                         const ClusterSpec& cluster, double crossing_share = 1);

// nccl-tests' bus bandwidth factor: busbw = algbw * factor for `n` ranks.
double BusBandwidthFactor(Collective c, int64_t n);

// The algorithm HCCL (NPUs) or NCCL (GPUs) would use: HCCL its full mesh
// inside one HCCS mesh (MeshServerLevel), a ring inside a server otherwise,
// across servers a ring unless the server count is a power of two, then
// halving-doubling, hierarchically when several ranks share a server; NCCL
// its tuner's pick among ring, tree, NVLS and NVLS tree (nccl_model.h), or
// on GPU clusters it does not model the faster of ring and double binary
// tree. `overrides` forces an algorithm per collective (absent: choose).
CollectiveAlgorithm ChooseAlgorithm(Collective c, double bytes, const GroupPlacement& p, const ClusterSpec& cluster,
                                    const std::map<Collective, CollectiveAlgorithm>& overrides = {});

}  // namespace shardlab
