#include "core/cost/nccl_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "core/cost/collective_cost.h"

namespace shardlab {
namespace {

// NCCL's indices: algorithms TREE, RING, NVLS, NVLS_TREE (CollNet needs a
// SHARP plugin, PAT one GPU per node: neither is modelled); protocols LL,
// LL128, SIMPLE. Ties go to the lower index, as in NCCL.
enum Algo { kTree, kRing, kNvlsAlgo, kNvlsTreeAlgo, kAlgos };
enum Proto { kLL, kLL128, kSimpleProto, kProtos };
enum Hw { kNvlink, kNet };

constexpr CollectiveAlgorithm kAlgorithmOf[kAlgos] = {CollectiveAlgorithm::kDoubleBinaryTree,
                                                      CollectiveAlgorithm::kRing, CollectiveAlgorithm::kNvls,
                                                      CollectiveAlgorithm::kNvlsTree};
constexpr Protocol kProtocolOf[kProtos] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

// tuning.cc (ncclTunerConstantsDefaults, NCCL 2.23-2.30), microseconds.
constexpr double kBaseLatency[kAlgos][kProtos] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}};
constexpr double kHwLatency[2][kAlgos][kProtos] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}},     // NVLink
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}},  // network
};
// Per architecture (Volta, Ampere, Hopper, Blackwell) and node count (1, 2, 3+), GB/s.
constexpr double kLLMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChannelRingLL128[4] = {20.0, 20.0, 36.7, 40.0};
constexpr double kPerChannelTreeLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChannelTree[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
constexpr double kPerChannelNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0, 57.7, 45.5}, {0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[4] = {0, 0, 0.85, 0.74};
// treeCorrectionFactor[protocol][log2(bytes / 64)].
constexpr double kTreeCorrection[kProtos][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

// The per-channel speeds (GB/s) the topology search tries, fastest first (search.cc).
const std::vector<double>& IntraSpeeds(int arch) {
  static const std::vector<double> kVolta = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
  static const std::vector<double> kHopper = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
  static const std::vector<double> kBlackwell = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
  return arch >= 3 ? kBlackwell : arch == 2 ? kHopper : kVolta;
}
const std::vector<double>& InterSpeeds(int arch) {
  static const std::vector<double> kVolta = {48, 30, 28, 24, 20, 18,  15,  12,   10,  9,
                                             7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> kHopper = {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};
  static const std::vector<double> kBlackwell = {96, 86,   80, 48, 45.1, 42, 40,  30,  24,   22,
                                                 20, 17.5, 15, 12, 6,    3,  2.4, 1.2, 0.24, 0.12};
  return arch >= 3 ? kBlackwell : arch == 2 ? kHopper : kVolta;
}
// The fastest speed of `speeds` at most `limit` (the slowest when none is).
double SpeedAtMost(const std::vector<double>& speeds, double limit) {
  for (double s : speeds)
    if (s <= limit) return s;
  return speeds.back();
}

// nccl-tests' busbw reaches NCCL's model only for buffers well above this
// size: below it the chunks are too few to fill every channel's pipeline.
// Time added: (S F / (S + F)) / algbw, about S / algbw for small S and F /
// algbw for large. F fitted once to published nccl-tests sweeps (DGX H100
// and DGX A100, one and several servers; docs/cost-model.md), not per case.
constexpr double kPipelineFillBytes = 16e6;

constexpr int kMaxRingChannels = 32;  // MAXCHANNELS / 2 (NCCL 2.25+)

// What ncclTopoCompute finds for one algorithm: channels and their GB/s.
struct Graph {
  int channels = 0;
  double bw_intra = 0, bw_inter = 0;
};

int ArchIndex(double cc) { return cc >= 10 ? 3 : cc >= 9 ? 2 : cc >= 8 ? 1 : 0; }

// NCCL's per-link NVLink bandwidth (topo.h: SM80 20, SM90 20.6, SM100 40.1 GB/s).
double NvlinkLinkBandwidth(double cc) { return cc >= 10 ? 40.1 : cc >= 9 ? 20.6 : cc >= 7 ? 20.0 : 18.0; }

// The ring search inside one NVSwitch server: the fastest speed whose
// channels carry the most of the GPU's NVLink bandwidth, then each channel
// duplicated at half speed (connect.cc) unless Hopper's slow-channel rule holds.
Graph SearchNvswitchRing(double nvlink, double cc) {
  Graph best;
  for (double s : IntraSpeeds(ArchIndex(cc))) {
    if (s > nvlink) continue;
    const int channels = std::min(static_cast<int>(std::floor(nvlink / s + 1e-9)), kMaxRingChannels / 2);
    if (channels * s > best.channels * best.bw_intra + 1e-9) best = {channels, s, s};
    if (channels * s >= nvlink - 1e-9) break;
  }
  if (best.bw_intra >= 25 && !(cc > 8.0 && best.bw_intra < 50 && best.channels > 4)) {
    best.channels = std::min(2 * best.channels, kMaxRingChannels);
    best.bw_intra /= 2;
    best.bw_inter /= 2;
  }
  return best;
}

// NVLS inside a server: one head per GPU, the NVSwitch link carrying the
// head's traffic and its multicast (ppn + 1 shares); the search then raises
// the network side up to twice the intra speed.
Graph SearchNvls(double nvlink, double cc, int64_t ppn) {
  const auto& speeds = IntraSpeeds(ArchIndex(cc));
  const double intra = SpeedAtMost(speeds, nvlink / static_cast<double>(ppn + 1));
  return {static_cast<int>(std::min<int64_t>(ppn, 32)), intra, SpeedAtMost(speeds, 2 * intra)};
}

struct Topology {
  int arch = 0;
  int64_t ranks = 1, nodes = 1, ppn = 1;
  Graph ring, tree, nvls, nvls_tree;
  int comm_channels = 0;  // channels at run time: the ring graph's, doubled
};

Topology Search(const GroupPlacement& p, const ClusterSpec& cluster) {
  Topology t;
  const double cc = cluster.device.compute_capability;
  t.arch = ArchIndex(cc);
  t.ranks = p.size;
  t.nodes = p.servers;
  t.ppn = p.per_server;
  const double nvlink = static_cast<double>(cluster.intra_server.nvlink_links) * NvlinkLinkBandwidth(cc);
  const bool nvls = cc >= 9 && t.ppn >= 2;
  if (t.nodes == 1) {
    t.ring = t.tree = SearchNvswitchRing(nvlink, cc);
    if (nvls) t.nvls = SearchNvls(nvlink, cc, t.ppn);
  } else {
    // One channel per NIC the group's GPUs reach (each GPU its rail's NIC).
    const InterServerNetwork& n = cluster.inter_server;
    const int64_t nics = std::max<int64_t>(
        1, std::min(n.nics_per_server, t.ppn * n.nics_per_server / std::max<int64_t>(cluster.devices_per_server, 1)));
    const int channels = static_cast<int>(nics);
    const double net = SpeedAtMost(InterSpeeds(t.arch), n.nic_bandwidth / 1e9);
    t.ring = {channels, net, net};
    // The tree's intra-node chain may run faster than a NIC, up to twice it.
    const double chain = SpeedAtMost(InterSpeeds(t.arch), std::min(nvlink / channels, 2 * net));
    t.tree = {channels, std::max(net, chain), net};
    if (nvls) t.nvls_tree = {channels, SearchNvls(nvlink, cc, t.ppn).bw_intra, net};
  }
  t.comm_channels = std::min(2 * t.ring.channels, 2 * kMaxRingChannels);
  return t;
}

// ncclTopoTuneModel for one (collective, algorithm, protocol): latency (us)
// and algorithm bandwidth (GB/s, of the whole buffer); 0 bandwidth when NCCL
// would not run the pair. `channel_share`: the part of the graph's channels
// that carry the call (1 as the tuner ranks; less at run time, RuntimeChannels).
struct Tuned {
  double latency = 0, algbw = 0;
};

Tuned Tune(Collective c, Algo a, Proto pr, const Topology& t, double channel_share = 1) {
  const bool allreduce = c == Collective::kAllReduce;
  const bool gather_scatter = c == Collective::kAllGather || c == Collective::kReduceScatter;
  const double n = static_cast<double>(t.ranks);
  const double nsteps = allreduce ? 2 * (n - 1) : gather_scatter ? n - 1 : n;
  if (c == Collective::kBroadcast && a != kRing) return {};
  if (gather_scatter && a != kRing && a != kNvlsAlgo) return {};
  if ((a == kNvlsAlgo || a == kNvlsTreeAlgo) && pr != kSimpleProto) return {};
  if (a == kNvlsAlgo && (t.nodes > 1 || t.nvls.channels < 2 || (!allreduce && t.ppn > 32))) return {};
  if (a == kNvlsTreeAlgo && (t.nodes == 1 || !allreduce || t.nvls_tree.channels < 2)) return {};
  const Graph& g = a == kTree ? t.tree : a == kRing ? t.ring : a == kNvlsAlgo ? t.nvls : t.nvls_tree;
  const int node = t.nodes <= 2 ? static_cast<int>(t.nodes) - 1 : 2;
  const double ppn = static_cast<double>(t.ppn);
  const double channels = g.channels * channel_share;

  double bw = t.nodes <= 2 ? g.bw_intra : g.bw_inter;
  if (a == kNvlsAlgo || a == kNvlsTreeAlgo) {
    double intra = g.bw_intra * kNvlsEfficiency[t.arch] * (channels - 1) / channels;
    intra *= allreduce ? 2.0 : (ppn - 1) / ppn;
    const double inter = g.bw_inter * (t.nodes <= 2 && a == kNvlsTreeAlgo ? 2 : 1);
    bw = std::min(intra, inter);
    if (a == kNvlsTreeAlgo) bw = std::min(bw, kPerChannelNvlsTree[t.arch][node]);
  }
  double bus = channels * bw;
  const double ll_max = kLLMaxBw[t.nodes == 1 ? t.arch : 0][node];
  if (a == kRing && pr == kLL) bus = std::min(ll_max, bus * 0.5);
  if (a == kRing && pr == kLL128) bus = std::min(bus * 0.92, channels * kPerChannelRingLL128[t.arch]);
  if (a == kTree && allreduce) bus = std::min(bus * 0.92, channels * kPerChannelTree[t.arch][node]);
  if (a == kTree && pr == kLL) bus = std::min(bus / 3.8, ll_max);
  if (a == kTree && pr == kLL128)
    bus = std::min(bus * (t.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * kPerChannelTreeLL128[t.arch][node]);
  // Bus bandwidth to the bandwidth of the whole buffer; NVLS AllGather and
  // ReduceScatter divide the total bytes by the bus figure as it is.
  if (!(a != kRing && gather_scatter)) bus *= (a == kTree) ? 0.5 : n / nsteps;

  double latency = kBaseLatency[a][pr];
  const double intra_latency = kHwLatency[kNvlink][a][pr];
  const double inter_latency = t.ppn == 1 ? kHwLatency[kNet][kTree][pr] : kHwLatency[kNet][a][pr];
  const double log2_nodes = std::floor(std::log2(static_cast<double>(t.nodes)));
  switch (a) {
    case kRing:
      if (c == Collective::kBroadcast) {
        latency += kHwLatency[t.nodes == 1 ? kNvlink : kNet][kRing][pr];
      } else {
        // Intel hosts: 1 us of network overhead per step, 3 with Simple.
        const double overhead = t.nodes > 1 ? (pr == kSimpleProto ? 3.0 : 1.0) : 0.0;
        const double inter_steps = t.nodes == 1 ? 0
                                   : allreduce  ? 2 * static_cast<double>(t.nodes - 1)
                                                : static_cast<double>(t.nodes - 1);
        latency += (nsteps - inter_steps) * std::max(intra_latency, overhead) + inter_steps * inter_latency;
      }
      break;
    case kTree:
      latency += 2 * ((ppn - 1) * intra_latency + log2_nodes * inter_latency);
      break;
    case kNvlsAlgo:
      latency = intra_latency;
      break;
    case kNvlsTreeAlgo:
      latency += intra_latency + 2 * log2_nodes * inter_latency;
      break;
    default:
      break;
  }
  return {latency, bus};
}

// ncclTopoGetAlgoTime: NCCL's ranking time (us) of a buffer, or -1.
double RankingMicros(Collective c, Algo a, Proto pr, double buffer, const Topology& t, Tuned* tuned) {
  *tuned = Tune(c, a, pr, t);
  if (tuned->algbw <= 0) return -1;
  const int log_size = buffer >= 64 ? static_cast<int>(std::floor(std::log2(buffer / 64))) : -1;
  if (a == kTree && c == Collective::kAllReduce && log_size >= 0 && log_size < 23)
    tuned->algbw *= kTreeCorrection[pr][log_size];
  // The ring's plateau: each step's latency grows once chunks are whole.
  if (a == kRing && pr == kSimpleProto && t.nodes > 1 && c == Collective::kAllReduce &&
      buffer / (t.comm_channels * static_cast<double>(t.ranks)) >= 64)
    tuned->latency *= t.arch >= 1 ? 1.4 : 1.9;
  return tuned->latency + buffer / (1000 * tuned->algbw);
}

// The channels one call runs on (enqueue.cc): ring and tree start from the
// communicator's channels and drop one while the buffer is under channels x
// threads x the protocol's bytes per thread (topoGetAlgoInfo: 8 for LL, times
// the ranks on a ring, 8 for LL128, 64 for Simple; 512 threads, LL128 640);
// the plan then deals the traffic out in cells of 32 KiB, at most one channel
// per cell (scheduleCollTasksToPlan; LL's traffic counts four times). Ring and
// tree only: NVLS keeps its own channels. (NCCL also halves a channel's
// threads below the same threshold once one channel is left; that is not
// modelled: nccl-tests' times below 32 KiB do not fall with it.)
int RuntimeChannels(Collective c, Algo a, Proto pr, double buffer, const Topology& t) {
  const double threads = pr == kLL128 ? 640 : 512;
  double per_thread = pr == kSimpleProto ? 64 : 8;
  if (a == kRing && pr == kLL) per_thread *= static_cast<double>(t.ranks);
  int channels = t.comm_channels;
  while (channels > 1 && buffer < channels * threads * per_thread) --channels;
  // Traffic per byte of a rank's count (ncclFuncTrafficPerByte): AllReduce 2,
  // AllGather and ReduceScatter the ranks (their count is one rank's share).
  const bool gather_scatter = c == Collective::kAllGather || c == Collective::kReduceScatter;
  const double count_bytes = gather_scatter ? buffer / static_cast<double>(t.ranks) : buffer;
  double traffic_per_byte = c == Collective::kAllReduce ? 2 : gather_scatter ? static_cast<double>(t.ranks) : 1;
  if (pr == kLL) traffic_per_byte *= 4;
  const double cell = 16 * std::ceil(std::ceil(32768 / traffic_per_byte) / 16);
  const double cells = std::max(1.0, std::ceil(count_bytes / cell));
  return static_cast<int>(std::min<double>(channels, cells));
}

NcclEstimate Estimate(Collective c, Algo a, Proto pr, double buffer, const Tuned& tuned, const Topology& t) {
  NcclEstimate e;
  e.algorithm = kAlgorithmOf[a];
  e.protocol = kProtocolOf[pr];
  e.latency = tuned.latency * 1e-6;
  // The tuner ranks with every channel; a small call runs on fewer, each at
  // the graph's per-channel speed (the communicator's duplicated channels
  // share the graph's links, which only matters when more than the graph's
  // channels run).
  double algbw = tuned.algbw;
  // NVLS runs NCCL's NVLS channels (src/transport/nvls.cc: 16 on SM90; 32
  // on SM100, 24 inside one NVLink domain), whatever its graph's count.
  e.channels = t.arch >= 3 ? (t.nodes == 1 ? 24 : 32) : 16;
  if (a == kRing || a == kTree) {
    const Graph& g = a == kTree ? t.tree : t.ring;
    const int channels = RuntimeChannels(c, a, pr, buffer, t);
    e.channels = channels;
    if (channels < g.channels) {
      const double share = static_cast<double>(channels) / static_cast<double>(g.channels);
      algbw *= Tune(c, a, pr, t, share).algbw / Tune(c, a, pr, t).algbw;
    }
  }
  e.algbw = algbw * 1e9;
  // LL inside a server stores each 8-byte word with its flag, which the
  // receiver polls for: no chunks to fill a pipeline with (nccl-tests on one
  // DGX H100 meets the tuner's LL time at 512 KiB and 1 MiB; LL128's
  // 128-byte lines and Simple's chunks do fill one).
  // The fill is over every channel's pipeline, as F was fitted: at the
  // tuner's bandwidth, the fewer channels of a small call already counted.
  const bool flagged = pr == kLL && t.nodes == 1;
  e.fill = flagged ? 0 : buffer * kPipelineFillBytes / (buffer + kPipelineFillBytes) / (tuned.algbw * 1e9);
  e.seconds = e.latency + buffer / e.algbw + e.fill;
  e.available = true;
  return e;
}

// The cheapest (algorithm, protocol) by NCCL's ranking, among `algos`.
NcclEstimate Cheapest(Collective c, const std::vector<Algo>& algos, double buffer, const GroupPlacement& p,
                      const ClusterSpec& cluster) {
  const Topology t = Search(p, cluster);
  double best = std::numeric_limits<double>::infinity();
  NcclEstimate out;
  for (Algo a : algos)
    for (int pr = 0; pr < kProtos; ++pr) {
      Tuned tuned;
      const double micros = RankingMicros(c, a, static_cast<Proto>(pr), buffer, t, &tuned);
      if (micros < 0 || micros >= best) continue;
      best = micros;
      out = Estimate(c, a, static_cast<Proto>(pr), buffer, tuned, t);
    }
  return out;
}

}  // namespace

bool UsesNcclModel(const ClusterSpec& cluster) {
  return cluster.device.kind == "gpu" && cluster.device.compute_capability > 0 &&
         cluster.intra_server.kind == IntraServerFabric::Kind::kNvSwitch && cluster.intra_server.nvlink_links > 0;
}

bool NcclTunes(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kAllGather || c == Collective::kReduceScatter ||
         c == Collective::kBroadcast;
}

double NcclP2pBandwidth(NetworkScope scope, const ClusterSpec& cluster) {
  const double cc = cluster.device.compute_capability;
  if (scope == NetworkScope::kIntraServer)
    return static_cast<double>(cluster.intra_server.nvlink_links) * NvlinkLinkBandwidth(cc) * 1e9;
  return SpeedAtMost(InterSpeeds(ArchIndex(cc)), cluster.inter_server.nic_bandwidth / 1e9) * 1e9;
}

int NcclP2pChannels(const GroupPlacement& p, const ClusterSpec& cluster) {
  const int channels = Search(p, cluster).comm_channels;
  int pow2 = 1;
  while (pow2 < channels) pow2 <<= 1;
  return pow2;
}

NcclEstimate NcclTime(Collective c, CollectiveAlgorithm algorithm, double buffer, const GroupPlacement& p,
                      const ClusterSpec& cluster) {
  for (int a = 0; a < kAlgos; ++a)
    if (kAlgorithmOf[a] == algorithm) return Cheapest(c, {static_cast<Algo>(a)}, buffer, p, cluster);
  return {};
}

NcclEstimate NcclChoose(Collective c, double buffer, const GroupPlacement& p, const ClusterSpec& cluster) {
  return Cheapest(c, {kTree, kRing, kNvlsAlgo, kNvlsTreeAlgo}, buffer, p, cluster);
}

}  // namespace shardlab
