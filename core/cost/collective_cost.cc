#include "core/cost/collective_cost.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "core/cost/nccl_model.h"

namespace shardlab {
namespace {

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
double Log2(int64_t v) { return std::ceil(std::log2(static_cast<double>(std::max<int64_t>(v, 1)))); }

// One flat algorithm over n ranks on one link class.
double FlatSeconds(Collective c, CollectiveAlgorithm a, double bytes, int64_t n, const Link& link) {
  if (n <= 1) return 0;
  const double nn = static_cast<double>(n);
  const double beta = bytes / link.bandwidth;
  const double alpha = link.latency;
  const bool hd = a == CollectiveAlgorithm::kHalvingDoubling && IsPowerOfTwo(n);
  if (a == CollectiveAlgorithm::kFullMesh) {
    // Every rank exchanges with its n - 1 peers at once, each over its own
    // link: a reduce-scatter sends S/n to each peer in one step, a gather its
    // slice; a broadcast scatters S/(n-1) from the root, then all-gathers it.
    switch (c) {
      case Collective::kAllReduce:
        return 2 * beta / nn + 2 * alpha;
      case Collective::kReduceScatter:
      case Collective::kAllToAll:
        return beta / nn + alpha;
      case Collective::kAllGather:
        return beta + alpha;
      case Collective::kBroadcast:
        return 2 * beta / (nn - 1) + 2 * alpha;
      case Collective::kSendRecv:
        return beta + alpha;
    }
  }
  switch (c) {
    case Collective::kAllReduce:
      if (hd) return 2 * (nn - 1) / nn * beta + 2 * Log2(n) * alpha;
      return 2 * (nn - 1) / nn * beta + 2 * (nn - 1) * alpha;
    case Collective::kReduceScatter:
      if (hd) return (nn - 1) / nn * beta + Log2(n) * alpha;
      return (nn - 1) / nn * beta + (nn - 1) * alpha;
    case Collective::kAllGather:  // bytes = one rank's input; the output is n times that
      if (hd) return (nn - 1) * beta + Log2(n) * alpha;
      return (nn - 1) * beta + (nn - 1) * alpha;
    case Collective::kAllToAll:
      return (nn - 1) / nn * beta + (nn - 1) * alpha;
    case Collective::kBroadcast:
      if (hd) return beta + Log2(n) * alpha;
      return beta + (nn - 1) * alpha;
    case Collective::kSendRecv:
      return beta + alpha;
  }
  return 0;
}

}  // namespace

GroupPlacement PlaceGroup(const std::vector<int64_t>& ranks, const ClusterSpec& cluster) {
  GroupPlacement p;
  p.size = static_cast<int64_t>(ranks.size());
  std::set<int64_t> servers, hccs_groups, leaves, pods;
  const int64_t dps = cluster.devices_per_server;
  const int64_t group = std::max<int64_t>(cluster.intra_server.group_size, 1);
  // Servers per leaf switch: half a switch's ports face down; rail-optimised
  // leaves connect one NIC of each server, otherwise all of a server's NICs.
  const int64_t down_ports = std::max<int64_t>(cluster.inter_server.switch_radix / 2, 1);
  const int64_t servers_per_leaf = cluster.inter_server.rail_optimized
                                       ? down_ports
                                       : std::max<int64_t>(down_ports / cluster.inter_server.nics_per_server, 1);
  const int64_t nics = cluster.inter_server.nics_per_server;
  for (int64_t r : ranks) {
    servers.insert(r / dps);
    hccs_groups.insert(r / group);
    const int64_t leaf_group = (r / dps) / servers_per_leaf;
    leaves.insert(leaf_group);
    // A pod holds down_ports leaves; rail-optimised, each leaf group is one leaf per rail; multi-plane,
    // each plane has pods of its own.
    const int64_t rail = (r % dps) * nics / dps;
    const int64_t leaf = cluster.inter_server.rail_optimized ? leaf_group * nics + rail : leaf_group;
    pods.insert(cluster.inter_server.multi_plane ? leaf_group / down_ports * nics + rail : leaf / down_ports);
  }
  p.servers = static_cast<int64_t>(servers.size());
  p.per_server = p.size / p.servers;
  p.one_hccs_group = hccs_groups.size() == servers.size();
  p.leaves = static_cast<int64_t>(leaves.size());
  p.pods = static_cast<int64_t>(pods.size());
  return p;
}

GroupPlacement PlaceStridedGroup(int64_t first_rank, int64_t size, int64_t stride, const ClusterSpec& cluster) {
  std::vector<int64_t> ranks;
  for (int64_t i = 0; i < size; ++i) ranks.push_back(first_rank + i * stride);
  return PlaceGroup(ranks, cluster);
}

namespace {
const CalibratedLink* Calibrated(const ClusterSpec& cluster, Collective c, NetworkScope scope) {
  auto it = cluster.calibrated_links.find({c, scope});
  return it == cluster.calibrated_links.end() ? nullptr : &it->second;
}
}  // namespace

bool MeshServerLevel(const GroupPlacement& p, const ClusterSpec& cluster) {
  return cluster.device.kind == "npu" && cluster.intra_server.kind == IntraServerFabric::Kind::kHccsMesh &&
         p.one_hccs_group && p.per_server > 2;
}

Link IntraServerLink(const GroupPlacement& p, const ClusterSpec& cluster, Collective c) {
  if (const CalibratedLink* l = Calibrated(cluster, c, NetworkScope::kIntraServer)) return {l->bandwidth, l->latency};
  const IntraServerFabric& f = cluster.intra_server;
  Link link{f.link_bandwidth, f.latency};
  if (f.kind == IntraServerFabric::Kind::kHccsMesh && !p.one_hccs_group)
    link.bandwidth = std::min(f.link_bandwidth, f.cross_group_bandwidth);
  return link;
}

Link InterServerLink(const GroupPlacement& p, const ClusterSpec& cluster, Collective c) {
  if (const CalibratedLink* l = Calibrated(cluster, c, NetworkScope::kInterServer)) return {l->bandwidth, l->latency};
  const InterServerNetwork& n = cluster.inter_server;
  // Every device of a server communicates at once in a training step, so a
  // device gets its share of the server's NICs; crossing leaf switches pays
  // the oversubscription and two more switch hops per tree level.
  double bandwidth =
      n.nic_bandwidth * static_cast<double>(n.nics_per_server) / static_cast<double>(cluster.devices_per_server);
  int switches = 1;
  if (p.leaves > 1) {
    bandwidth /= n.oversubscription;
    switches = n.levels >= 3 ? 5 : 3;
  }
  if (n.levels >= 3 && p.pods > 1) bandwidth /= n.spine_oversubscription;
  return {bandwidth, 2 * n.link_latency + switches * n.switch_latency};
}

namespace {
// `nccl_p2p`: the links at NCCL's point-to-point speed (NcclP2pBandwidth).
// `crossing_share`: TimeCollective's.
double ClosedFormSeconds(Collective c, CollectiveAlgorithm a, double bytes, const GroupPlacement& p,
                         const ClusterSpec& cluster, bool nccl_p2p = false, double crossing_share = 1) {
  Link intra = IntraServerLink(p, cluster, c);
  if (nccl_p2p) intra.bandwidth = std::min(intra.bandwidth, NcclP2pBandwidth(NetworkScope::kIntraServer, cluster));
  if (p.servers == 1) return FlatSeconds(c, a, bytes, p.size, intra);
  Link inter = InterServerLink(p, cluster, c);
  if (nccl_p2p) inter.bandwidth = std::min(inter.bandwidth, NcclP2pBandwidth(NetworkScope::kInterServer, cluster));
  const int64_t k = p.per_server, m = p.servers;
  if (a == CollectiveAlgorithm::kHierarchical && k > 1) {
    // Intra-server reduce-scatter, inter-server phase on 1/k of the data per
    // rail, intra-server all-gather (AllReduce); the analogous halves otherwise.
    const CollectiveAlgorithm across =
        IsPowerOfTwo(m) ? CollectiveAlgorithm::kHalvingDoubling : CollectiveAlgorithm::kRing;
    const CollectiveAlgorithm inside =
        MeshServerLevel(p, cluster) ? CollectiveAlgorithm::kFullMesh : CollectiveAlgorithm::kRing;
    const double kk = static_cast<double>(k);
    switch (c) {
      case Collective::kAllReduce:
        return FlatSeconds(Collective::kReduceScatter, inside, bytes, k, intra) +
               FlatSeconds(Collective::kAllReduce, across, bytes / kk, m, inter) +
               FlatSeconds(Collective::kAllGather, inside, bytes / kk, k, intra);
      case Collective::kReduceScatter:
        return FlatSeconds(Collective::kReduceScatter, inside, bytes, k, intra) +
               FlatSeconds(Collective::kReduceScatter, across, bytes / kk, m, inter);
      case Collective::kAllGather:
        return FlatSeconds(Collective::kAllGather, across, bytes, m, inter) +
               FlatSeconds(Collective::kAllGather, inside, bytes * static_cast<double>(m), k, intra);
      default:
        break;
    }
  }
  if (c == Collective::kAllToAll) {
    // Peers in the same server over the intra-server links, the rest over the NICs, concurrently.
    // Forwarded (crossing_share < 1): all but the own device's share goes over the server's links.
    const double n = static_cast<double>(p.size), kk = static_cast<double>(k);
    const double local = (crossing_share < 1 ? (kk - 1) / kk : (kk - 1) / n) * bytes / intra.bandwidth;
    const double remote = crossing_share * (n - kk) / n * bytes / inter.bandwidth;
    return std::max(local, remote) + (n - 1) * inter.latency;
  }
  // A flat algorithm across servers runs at the slower link on every step
  // (only the network's when each server holds one member). With k members
  // per server, NCCL and HCCL run k rings (channels) whose server-crossing
  // hops leave through different devices' NICs, so the crossing gets k NIC shares.
  // Together the channels load each intra-server hop with (k-1)/k of the
  // ring's volume and each server crossing with 1/k.
  if (k == 1) return FlatSeconds(c, a, bytes, p.size, inter);
  const double kk = static_cast<double>(k);
  Link slowest{1.0 / std::max((kk - 1) / (kk * intra.bandwidth), 1.0 / (kk * inter.bandwidth)),
               std::max(intra.latency, inter.latency)};
  return FlatSeconds(c, a, bytes, p.size, slowest);
}

}  // namespace

namespace {

bool NcclAlgorithm(CollectiveAlgorithm a) {
  return a == CollectiveAlgorithm::kRing || a == CollectiveAlgorithm::kDoubleBinaryTree ||
         a == CollectiveAlgorithm::kNvls || a == CollectiveAlgorithm::kNvlsTree;
}

NetworkScope ScopeOf(const GroupPlacement& p) {
  return p.servers == 1 ? NetworkScope::kIntraServer : NetworkScope::kInterServer;
}

// NCCL times the collective (its model, not a calibration of this cluster's links).
bool TimedByNccl(Collective c, const GroupPlacement& p, const ClusterSpec& cluster) {
  return p.size > 1 && UsesNcclModel(cluster) && NcclTunes(c) && !Calibrated(cluster, c, ScopeOf(p));
}

// nccl-tests' buffer (the whole of it) for CollectiveSeconds' per-rank bytes.
double NcclBuffer(Collective c, double bytes, const GroupPlacement& p) {
  return c == Collective::kAllGather ? bytes * static_cast<double>(p.size) : bytes;
}

}  // namespace

double ComputeShare(int sms, const ClusterSpec& cluster) {
  const auto units = static_cast<double>(cluster.device.compute_units);
  return units > 0 ? std::min(1.0, sms / units) : 0.0;
}

CollectiveTiming TimeCollective(Collective c, CollectiveAlgorithm a, double bytes, const GroupPlacement& p,
                                const ClusterSpec& cluster, double crossing_share) {
  if (p.size <= 1 && c != Collective::kSendRecv) return {};
  if (TimedByNccl(c, p, cluster) && NcclAlgorithm(a)) {
    NcclEstimate e = NcclTime(c, a, NcclBuffer(c, bytes, p), p, cluster);
    if (!e.available) e = NcclTime(c, CollectiveAlgorithm::kRing, NcclBuffer(c, bytes, p), p, cluster);
    // The SimGrid engine runs NCCL's algorithms as their channels' rings
    // over the same links: the ring's bandwidth term on the platform, scaled
    // to NCCL's transfer and fill, then NCCL's latency.
    const double ring_latency = ClosedFormSeconds(c, CollectiveAlgorithm::kRing, 0, p, cluster);
    const double ring_transfer = ClosedFormSeconds(c, CollectiveAlgorithm::kRing, bytes, p, cluster) - ring_latency;
    CollectiveTiming t;
    t.seconds = e.seconds;
    t.library.timed = true;
    t.library.protocol = e.protocol;
    t.library.wire_factor = ring_transfer > 0 ? (e.seconds - e.latency) / ring_transfer : 1;
    t.library.latency = e.latency;
    t.compute_share = ComputeShare(e.channels, cluster);
    return t;
  }
  if (c == Collective::kAllToAll && UsesNcclModel(cluster) && !Calibrated(cluster, c, ScopeOf(p))) {
    // NCCL's sends run below the links' line rate: the flows carry the
    // bytes that make the platform's transfer take NCCL's.
    const double latency = ClosedFormSeconds(c, a, 0, p, cluster);
    const double platform = ClosedFormSeconds(c, a, bytes, p, cluster, false, crossing_share) - latency;
    const double nccl = ClosedFormSeconds(c, a, bytes, p, cluster, /*nccl_p2p=*/true, crossing_share) - latency;
    CollectiveTiming t;
    t.seconds = latency + nccl;
    t.library.timed = true;
    t.library.wire_factor = platform > 0 ? nccl / platform : 1;
    t.library.latency = latency;
    t.compute_share = ComputeShare(NcclP2pChannels(p, cluster), cluster);
    return t;
  }
  const double seconds = ClosedFormSeconds(c, a, bytes, p, cluster, false, crossing_share);
  const CalibratedLink* link = Calibrated(cluster, c, ScopeOf(p));
  CollectiveTiming t;
  t.library.mesh_server_level = a == CollectiveAlgorithm::kHierarchical && p.servers > 1 && MeshServerLevel(p, cluster);
  t.seconds = link ? std::max(seconds, link->floor) : seconds;
  // Calibrated links time it, but NCCL still runs it on its channels' SMs.
  if (UsesNcclModel(cluster) && c != Collective::kSendRecv)
    t.compute_share = ComputeShare(
        NcclTunes(c) ? NcclChoose(c, NcclBuffer(c, bytes, p), p, cluster).channels : NcclP2pChannels(p, cluster),
        cluster);
  return t;
}

double CollectiveSeconds(Collective c, CollectiveAlgorithm a, double bytes, const GroupPlacement& p,
                         const ClusterSpec& cluster, double crossing_share) {
  return TimeCollective(c, a, bytes, p, cluster, crossing_share).seconds;
}

double BusBandwidthFactor(Collective c, int64_t n) {
  const double nn = static_cast<double>(n);
  switch (c) {
    case Collective::kAllReduce:
      return 2 * (nn - 1) / nn;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (nn - 1) / nn;
    default:
      return 1;
  }
}

CollectiveAlgorithm ChooseAlgorithm(Collective c, double bytes, const GroupPlacement& p, const ClusterSpec& cluster,
                                    const std::map<Collective, CollectiveAlgorithm>& overrides) {
  if (auto it = overrides.find(c); it != overrides.end()) return it->second;
  if (c == Collective::kSendRecv) return CollectiveAlgorithm::kDirect;
  if (p.servers == 1 && MeshServerLevel(p, cluster)) return CollectiveAlgorithm::kFullMesh;
  if (c == Collective::kAllToAll) return CollectiveAlgorithm::kPairwise;
  if (TimedByNccl(c, p, cluster)) return NcclChoose(c, NcclBuffer(c, bytes, p), p, cluster).algorithm;
  if (cluster.device.kind == "npu") {
    if (p.servers > 1 && p.per_server > 1 && c != Collective::kBroadcast) return CollectiveAlgorithm::kHierarchical;
    if (p.servers > 1 && IsPowerOfTwo(p.servers)) return CollectiveAlgorithm::kHalvingDoubling;
    return CollectiveAlgorithm::kRing;
  }
  return CollectiveAlgorithm::kRing;
}

}  // namespace shardlab
