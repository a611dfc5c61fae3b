#include "sim/collective_flows.h"

#include <algorithm>
#include <map>

namespace shardlab::sim {
namespace {

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// A ring over `members`: `steps` steps of `step_bytes` each.
void Ring(const std::vector<int64_t>& members, int64_t steps, double step_bytes, Fidelity fidelity,
          std::vector<Phase>* out) {
  const int64_t n = static_cast<int64_t>(members.size());
  if (n <= 1 || steps <= 0) return;
  if (fidelity == Fidelity::kAggregated) {
    Phase p;
    for (int64_t i = 0; i < n; ++i)
      p.flows.push_back({members[i], members[(i + 1) % n], step_bytes * static_cast<double>(steps)});
    p.extra_latency_steps = steps - 1;
    out->push_back(std::move(p));
    return;
  }
  for (int64_t s = 0; s < steps; ++s) {
    Phase p;
    for (int64_t i = 0; i < n; ++i) p.flows.push_back({members[i], members[(i + 1) % n], step_bytes});
    out->push_back(std::move(p));
  }
}

// Recursive halving (reduce-scatter) then doubling (all-gather) on a
// power-of-two group. Step fidelity exchanges with each partner in turn;
// aggregated fidelity moves the same volume, (n-1)/n of the buffer per half,
// in one flow per member to its neighbour with the log2(n) step latencies.
void HalvingDoubling(const std::vector<int64_t>& members, double bytes, bool reduce_scatter, bool all_gather,
                     Fidelity fidelity, std::vector<Phase>* out) {
  const int64_t n = static_cast<int64_t>(members.size());
  if (fidelity == Fidelity::kAggregated) {
    int64_t log2n = 0;
    while ((int64_t{1} << log2n) < n) ++log2n;
    const int64_t halves = (reduce_scatter ? 1 : 0) + (all_gather ? 1 : 0);
    Phase p;
    const double volume = static_cast<double>(halves) * bytes * static_cast<double>(n - 1) / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) p.flows.push_back({members[i], members[(i + 1) % n], volume});
    p.extra_latency_steps = halves * log2n - 1;
    out->push_back(std::move(p));
    return;
  }
  double chunk = bytes;
  std::vector<Phase> halving;
  for (int64_t distance = n / 2; distance >= 1; distance /= 2) {
    chunk /= 2;
    Phase p;
    for (int64_t i = 0; i < n; ++i) p.flows.push_back({members[i], members[i ^ distance], chunk});
    halving.push_back(std::move(p));
  }
  if (reduce_scatter) out->insert(out->end(), halving.begin(), halving.end());
  if (all_gather) out->insert(out->end(), halving.rbegin(), halving.rend());
}

// HCCL's mesh: every member sends `bytes` to every other member at once.
void AllPairs(const std::vector<int64_t>& members, double bytes, std::vector<Phase>* out) {
  Phase p;
  for (int64_t i : members)
    for (int64_t j : members)
      if (i != j) p.flows.push_back({i, j, bytes});
  out->push_back(std::move(p));
}

void FullMesh(Collective c, double bytes, const std::vector<int64_t>& members, std::vector<Phase>* out) {
  const double nn = static_cast<double>(members.size());
  switch (c) {
    case Collective::kAllReduce:
      AllPairs(members, bytes / nn, out);  // reduce-scatter
      AllPairs(members, bytes / nn, out);  // all-gather
      return;
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return AllPairs(members, bytes / nn, out);
    case Collective::kAllGather:
      return AllPairs(members, bytes, out);
    case Collective::kBroadcast: {
      Phase scatter;
      for (size_t i = 1; i < members.size(); ++i) scatter.flows.push_back({members[0], members[i], bytes / (nn - 1)});
      out->push_back(std::move(scatter));
      return AllPairs(members, bytes / (nn - 1), out);
    }
    case Collective::kSendRecv:
      out->push_back({{{members[0], members[1], bytes}}});
      return;
  }
}

void Flat(Collective c, CollectiveAlgorithm a, double bytes, const std::vector<int64_t>& members, Fidelity fidelity,
          std::vector<Phase>* out) {
  const int64_t n = static_cast<int64_t>(members.size());
  if (n <= 1) return;
  if (a == CollectiveAlgorithm::kFullMesh) return FullMesh(c, bytes, members, out);
  const double nn = static_cast<double>(n);
  const bool hd = a == CollectiveAlgorithm::kHalvingDoubling && IsPowerOfTwo(n);
  switch (c) {
    case Collective::kAllReduce:
      if (hd) return HalvingDoubling(members, bytes, true, true, fidelity, out);
      return Ring(members, 2 * (n - 1), bytes / nn, fidelity, out);
    case Collective::kReduceScatter:
      if (hd) return HalvingDoubling(members, bytes, true, false, fidelity, out);
      return Ring(members, n - 1, bytes / nn, fidelity, out);
    case Collective::kAllGather:
      if (hd) return HalvingDoubling(members, bytes * nn, false, true, fidelity, out);
      return Ring(members, n - 1, bytes, fidelity, out);
    case Collective::kBroadcast:
      return Ring(members, n - 1, bytes / static_cast<double>(n - 1), fidelity, out);
    case Collective::kAllToAll: {
      // Pairwise exchange; large groups send to the opposite member only,
      // carrying the whole off-rank share, which loads the bisection alike.
      Phase p;
      if (n <= 64) {
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j)
            if (i != j) p.flows.push_back({members[i], members[j], bytes / nn});
      } else {
        for (int64_t i = 0; i < n; ++i)
          p.flows.push_back({members[i], members[(i + n / 2) % n], bytes * (nn - 1) / nn});
        p.extra_latency_steps = n - 2;
      }
      out->push_back(std::move(p));
      return;
    }
    case Collective::kSendRecv: {
      Phase p;
      p.flows.push_back({members[0], members[1], bytes});
      out->push_back(std::move(p));
      return;
    }
  }
}

// The members of a group on each server it spans, in group order.
std::map<int64_t, std::vector<int64_t>> ByServer(const std::vector<int64_t>& members, int64_t devices_per_server) {
  std::map<int64_t, std::vector<int64_t>> by_server;
  for (int64_t r : members) by_server[r / devices_per_server].push_back(r);
  return by_server;
}

// Members per server when every server holds as many; 1 otherwise.
int64_t EvenMembersPerServer(const std::map<int64_t, std::vector<int64_t>>& by_server, size_t members) {
  const bool even = std::all_of(by_server.begin(), by_server.end(), [&](const auto& entry) {
    return entry.second.size() == by_server.begin()->second.size();
  });
  return even ? static_cast<int64_t>(members / by_server.size()) : 1;
}

// Whether a pairwise AlltoAll over these servers runs rail by rail (PXN):
// the same slots on every server, so that the i-th member of each shares a
// rail.
bool RailAllToAll(const std::map<int64_t, std::vector<int64_t>>& by_server, int64_t k, size_t members,
                  int64_t devices_per_server) {
  if (by_server.size() < 2 || k < 2 || members > 64) return false;
  auto slots = [&](const std::vector<int64_t>& ranks) {
    std::vector<int64_t> s;
    for (int64_t r : ranks) s.push_back(r % devices_per_server);
    std::sort(s.begin(), s.end());
    return s;
  };
  const std::vector<int64_t> first = slots(by_server.begin()->second);
  return std::all_of(by_server.begin(), by_server.end(),
                     [&](const auto& entry) { return slots(entry.second) == first; });
}

// PXN: member (A, j) sends over NVLink to (A, i) its data for (A, i) and for
// the i-th member of every other server; (A, i) sends to (B, i) what its
// server's k members hold for (B, i). Each member's buffer is `bytes`, bytes/n
// for each peer.
void RailAllToAll(std::map<int64_t, std::vector<int64_t>> by_server, int64_t k, double bytes,
                  int64_t devices_per_server, std::vector<Phase>* out) {
  // Each server's members by slot, so that the i-th of every server share a rail.
  for (auto& [server, ranks] : by_server)
    std::sort(ranks.begin(), ranks.end(),
              [&](int64_t a, int64_t b) { return a % devices_per_server < b % devices_per_server; });
  const double share = bytes / static_cast<double>(k * static_cast<int64_t>(by_server.size()));
  const double servers = static_cast<double>(by_server.size());
  Phase p;
  for (const auto& [server, ranks] : by_server)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < k; ++i)
        if (i != j) p.flows.push_back({ranks[j], ranks[i], share * servers});
  for (const auto& [a, from] : by_server)
    for (const auto& [b, to] : by_server)
      if (a != b)
        for (int64_t i = 0; i < k; ++i) p.flows.push_back({from[i], to[i], share * static_cast<double>(k)});
  out->push_back(std::move(p));
}

// Runs `phases` at the same time as `merged`: phase i of both become one.
void RunConcurrently(const std::vector<Phase>& phases, std::vector<Phase>* merged) {
  if (merged->size() < phases.size()) merged->resize(phases.size());
  for (size_t i = 0; i < phases.size(); ++i) {
    (*merged)[i].flows.insert((*merged)[i].flows.end(), phases[i].flows.begin(), phases[i].flows.end());
    (*merged)[i].extra_latency_steps = phases[i].extra_latency_steps;
  }
}

}  // namespace

std::vector<Phase> ExpandCollective(Collective c, CollectiveAlgorithm a, double bytes,
                                    const std::vector<int64_t>& members, int64_t devices_per_server, Fidelity fidelity,
                                    const LibraryTiming& library, double crossing_share) {
  std::vector<Phase> out = ExpandCollective(c, a, bytes, members, devices_per_server, fidelity, library);
  if (c != Collective::kAllToAll || crossing_share >= 1) return out;
  for (Phase& phase : out)
    for (Flow& f : phase.flows)
      if (f.src / devices_per_server != f.dst / devices_per_server) f.bytes *= crossing_share;
  return out;
}

std::vector<Phase> ExpandCollective(Collective c, CollectiveAlgorithm a, double bytes,
                                    const std::vector<int64_t>& members, int64_t devices_per_server, Fidelity fidelity,
                                    const LibraryTiming& library) {
  if (a == CollectiveAlgorithm::kDoubleBinaryTree || a == CollectiveAlgorithm::kNvls ||
      a == CollectiveAlgorithm::kNvlsTree)
    a = CollectiveAlgorithm::kRing;
  if (library.timed) {
    std::vector<Phase> out =
        ExpandCollective(c, a, bytes * library.wire_factor, members, devices_per_server, Fidelity::kAggregated);
    for (Phase& phase : out) phase.extra_latency_steps = 0;
    if (!out.empty()) out.back().library_latency = library.latency;
    return out;
  }
  std::vector<Phase> out;
  const std::map<int64_t, std::vector<int64_t>> by_server = ByServer(members, devices_per_server);
  // Channels per server and rails need the same number of members on every
  // server; a group spread unevenly (a data-parallel size that does not
  // divide the servers' devices) runs one flat ring over its members.
  const int64_t k = EvenMembersPerServer(by_server, members.size());
  if (c == Collective::kAllToAll && a != CollectiveAlgorithm::kFullMesh &&
      RailAllToAll(by_server, k, members.size(), devices_per_server)) {
    RailAllToAll(by_server, k, bytes, devices_per_server, &out);
    return out;
  }
  const bool hierarchical =
      a == CollectiveAlgorithm::kHierarchical && by_server.size() > 1 && k > 1 &&
      (c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kAllGather);
  const bool ring = a == CollectiveAlgorithm::kRing || a == CollectiveAlgorithm::kHierarchical;
  if (!hierarchical && ring && by_server.size() > 1 && k > 1 && c != Collective::kAllToAll &&
      c != Collective::kSendRecv) {
    // k channels, each a ring over every server that enters server s at local
    // position c+1 and leaves it from local c, carrying 1/k of the data.
    if (fidelity == Fidelity::kAggregated) {
      // All channels at once: inside a server the hop j -> j+1 carries k-1
      // channels; each of the k crossings to the next server carries one.
      const int64_t n = static_cast<int64_t>(members.size());
      const double nn = static_cast<double>(n);
      int64_t steps = n - 1;
      double step_bytes = bytes / nn;
      if (c == Collective::kAllReduce) steps = 2 * (n - 1);
      if (c == Collective::kAllGather) step_bytes = bytes;
      if (c == Collective::kBroadcast) step_bytes = bytes / static_cast<double>(n - 1);
      const double per_channel = static_cast<double>(steps) * step_bytes / static_cast<double>(k);
      Phase phase;
      std::vector<const std::vector<int64_t>*> servers;
      for (const auto& [server, ranks] : by_server) servers.push_back(&ranks);
      for (size_t s = 0; s < servers.size(); ++s) {
        const auto& here = *servers[s];
        const auto& next = *servers[(s + 1) % servers.size()];
        for (int64_t j = 0; j < k; ++j) phase.flows.push_back({here[j], next[(j + 1) % k], per_channel});
      }
      for (const auto* ranks : servers)
        for (int64_t j = 0; j < k; ++j)
          phase.flows.push_back({(*ranks)[j], (*ranks)[(j + 1) % k], per_channel * static_cast<double>(k - 1)});
      phase.extra_latency_steps = steps - 1;  // timed on the first flow, a server crossing
      out.push_back(std::move(phase));
      return out;
    }
    std::vector<Phase> merged;
    for (int64_t channel = 0; channel < k; ++channel) {
      std::vector<int64_t> order;
      for (const auto& [server, ranks] : by_server)
        for (int64_t i = 1; i <= k; ++i) order.push_back(ranks[(channel + i) % k]);
      std::vector<Phase> phases;
      Flat(c, CollectiveAlgorithm::kRing, bytes / static_cast<double>(k), order, fidelity, &phases);
      RunConcurrently(phases, &merged);
    }
    out.insert(out.end(), merged.begin(), merged.end());
    return out;
  }
  if (!hierarchical) {
    Flat(c, a == CollectiveAlgorithm::kHierarchical ? CollectiveAlgorithm::kRing : a, bytes, members, fidelity, &out);
    return out;
  }
  // Intra-server phase on every server at once, then one inter-server group
  // per local position (a rail), then the intra-server gather.
  const int64_t m = static_cast<int64_t>(by_server.size());
  const CollectiveAlgorithm across =
      IsPowerOfTwo(m) ? CollectiveAlgorithm::kHalvingDoubling : CollectiveAlgorithm::kRing;
  const CollectiveAlgorithm inside =
      library.mesh_server_level ? CollectiveAlgorithm::kFullMesh : CollectiveAlgorithm::kRing;
  auto each_server = [&](Collective type, double size) {
    std::vector<Phase> merged;
    for (const auto& [server, ranks] : by_server) {
      std::vector<Phase> phases;
      Flat(type, inside, size, ranks, fidelity, &phases);
      RunConcurrently(phases, &merged);
    }
    out.insert(out.end(), merged.begin(), merged.end());
  };
  auto each_rail = [&](Collective type, double size) {
    std::vector<Phase> merged;
    for (int64_t local = 0; local < k; ++local) {
      std::vector<int64_t> rail;
      for (const auto& [server, ranks] : by_server) rail.push_back(ranks[local]);
      std::vector<Phase> phases;
      Flat(type, across, size, rail, fidelity, &phases);
      RunConcurrently(phases, &merged);
    }
    out.insert(out.end(), merged.begin(), merged.end());
  };
  const double kk = static_cast<double>(k);
  switch (c) {
    case Collective::kAllReduce:
      each_server(Collective::kReduceScatter, bytes);
      each_rail(Collective::kAllReduce, bytes / kk);
      each_server(Collective::kAllGather, bytes / kk);
      break;
    case Collective::kReduceScatter:
      each_server(Collective::kReduceScatter, bytes);
      each_rail(Collective::kReduceScatter, bytes / kk);
      break;
    default:  // AllGather
      each_rail(Collective::kAllGather, bytes);
      each_server(Collective::kAllGather, bytes * static_cast<double>(m));
      break;
  }
  return out;
}

int64_t AllToAllFlowsPerMember(CollectiveAlgorithm a, const std::vector<int64_t>& members, int64_t devices_per_server) {
  const int64_t n = static_cast<int64_t>(members.size());
  if (a == CollectiveAlgorithm::kFullMesh) return n - 1;
  const auto by_server = ByServer(members, devices_per_server);
  const int64_t k = EvenMembersPerServer(by_server, members.size());
  if (RailAllToAll(by_server, k, members.size(), devices_per_server))
    return (k - 1) + static_cast<int64_t>(by_server.size()) - 1;
  return n <= 64 ? n - 1 : 1;
}

}  // namespace shardlab::sim
