// NCCL's own performance model, as its tuner ranks algorithms and protocols
// (src/graph/tuning.cc, NCCL 2.23-2.30): the channels and per-channel
// bandwidth its topology search finds on a cluster, a latency and a bus
// bandwidth per (algorithm, protocol), and the cheapest pair per size. To
// NCCL's ranking time it adds what the tuner leaves out and nccl-tests
// measures: a small call runs on fewer channels (src/enqueue.cc), a large one
// fills a pipeline first. The time predicts a run, not just a ranking.
#pragma once

#include "core/comm/collective.h"
#include "core/config/cluster_config.h"

namespace shardlab {

struct GroupPlacement;

// One collective as NCCL would run it.
struct NcclEstimate {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  double latency = 0;      // seconds, NCCL's per-call latency for the pair
  double algbw = 0;        // bytes/s of the whole buffer (nccl-tests' algbw)
  double fill = 0;         // seconds of pipeline fill beyond NCCL's model
  double seconds = 0;      // latency + buffer / algbw + fill
  // The CTAs its kernel runs, one per channel (src/enqueue.cc: the grid is
  // the plan's channels), each holding one SM while the call runs.
  int channels = 0;
  bool available = false;  // the pair runs here
};

// Whether NCCL's model times collectives on `cluster`: GPUs with a compute
// capability on NVSwitch servers with a known NVLink count.
bool UsesNcclModel(const ClusterSpec& cluster);

// Whether NCCL runs `c` (AllReduce, AllGather, ReduceScatter, Broadcast);
// AllToAll and SendRecv are point-to-point sends outside its tuner.
bool NcclTunes(Collective c);

// The bandwidth (bytes/s, each way) one GPU's point-to-point transfers
// reach under NCCL, AllToAll's sends among them: inside a server its
// topology's NVLink figure (links x NCCL's per-link speed: 371 GB/s on an
// H100 of 450 GB/s line rate, the ~370 GB/s NCCL's maintainers quote as the
// busbw of every operation but NVLS allreduce, nccl-tests#212); across
// servers the speed its search gives the GPU's NIC (48 GB/s for a 400 Gb/s
// NIC: one NIC per GPU, an AllToAll does not aggregate them, nccl-tests#267).
double NcclP2pBandwidth(NetworkScope scope, const ClusterSpec& cluster);

// The channels NCCL's point-to-point kernel (an AllToAll's sends) runs on:
// the communicator's channels rounded up to a power of two
// (ncclTopoComputeP2pChannels), one CTA each.
int NcclP2pChannels(const GroupPlacement& p, const ClusterSpec& cluster);

// `buffer`: nccl-tests' size, the whole buffer (AllGather's output,
// ReduceScatter's input). `algorithm` kRing, kDoubleBinaryTree, kNvls or
// kNvlsTree: the fastest protocol for it (not available: an estimate with
// available false); NcclChoose: NCCL's own pick among all.
NcclEstimate NcclTime(Collective c, CollectiveAlgorithm algorithm, double buffer, const GroupPlacement& p,
                      const ClusterSpec& cluster);
NcclEstimate NcclChoose(Collective c, double buffer, const GroupPlacement& p, const ClusterSpec& cluster);

}  // namespace shardlab
