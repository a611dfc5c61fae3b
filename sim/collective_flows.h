// Collective algorithms expanded into flows on the platform. A collective is
// a sequence of phases; a phase is a set of flows that run concurrently (and
// contend for the links they share) followed by the per-step latencies the
// aggregated model folds in. Aggregated fidelity carries a whole ring in one
// flow per member; step fidelity simulates every ring step.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/simulation_options.h"
#include "core/cost/collective_cost.h"

namespace shardlab::sim {

struct Flow {
  int64_t src;
  int64_t dst;
  double bytes;
};

struct Phase {
  std::vector<Flow> flows;
  // Algorithm steps folded into this phase beyond the first: their latency
  // (steps x the route latency of the first flow) is added after the flows.
  int64_t extra_latency_steps = 0;
  // A library's latency (LibraryTiming::latency): what the longest route
  // latency among the flows leaves of it is waited for after the flows.
  double library_latency = 0;
};

// `members` are ranks in group order; `bytes` follows CollectiveSeconds.
// NCCL's trees and NVLS run as their channels' rings over the same links
// (inside the servers and along the rails between them). A library-timed
// collective (LibraryTiming::timed) runs as one aggregated phase whose
// flows carry wire_factor times the bytes, and takes the library's latency.
// An AlltoAll over members on the same slots of several servers (up to 64
// members) runs as NCCL's PXN does: each member sends its data for another
// server's member over NVLink to the local member on that member's rail,
// which sends one flow per remote server carrying its server's data for it.
std::vector<Phase> ExpandCollective(Collective c, CollectiveAlgorithm a, double bytes,
                                    const std::vector<int64_t>& members, int64_t devices_per_server, Fidelity fidelity,
                                    const LibraryTiming& library = {});
// The same with an AlltoAll's server-crossing flows carrying `crossing_share`
// of their bytes (a flex expert dispatch: TimeCollective's crossing_share).
std::vector<Phase> ExpandCollective(Collective c, CollectiveAlgorithm a, double bytes,
                                    const std::vector<int64_t>& members, int64_t devices_per_server, Fidelity fidelity,
                                    const LibraryTiming& library, double crossing_share);

// The flows each member of `members` starts in an AlltoAll run by `a`
// (ExpandCollective): what the engine's work estimate counts.
int64_t AllToAllFlowsPerMember(CollectiveAlgorithm a, const std::vector<int64_t>& members, int64_t devices_per_server);

}  // namespace shardlab::sim
