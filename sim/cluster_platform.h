// The SimGrid platform of a cluster, built in code from a ClusterSpec: one
// host per device; inside a server NVSwitch ports (up and down per device) or
// HCCS full-mesh groups (one link per ordered pair) with a shared path
// between the groups; per-device NICs (shared when a server has fewer NICs
// than devices) into a fat tree whose leaf and pod switches are aggregated
// up and down links carrying the oversubscribed capacity. Routes are computed
// arithmetically by a custom zone, so 4096 hosts build in milliseconds.
#pragma once

#include <memory>
#include <vector>

#include "core/config/cluster_config.h"

namespace simgrid::s4u {
class Engine;
class Host;
}  // namespace simgrid::s4u

namespace shardlab::sim {

class ClusterPlatform {
 public:
  // Creates the SimGrid engine (one per process) with alpha-beta link
  // semantics (CM02, no cross traffic, no TCP window) and the platform of the
  // first `devices` devices of the cluster.
  ClusterPlatform(const ClusterSpec& cluster, int64_t devices);
  ~ClusterPlatform();
  ClusterPlatform(const ClusterPlatform&) = delete;
  ClusterPlatform& operator=(const ClusterPlatform&) = delete;

  simgrid::s4u::Engine& engine() { return *engine_; }
  simgrid::s4u::Host* host(int64_t rank) const { return hosts_.at(rank); }
  // Sum of the latencies on the route between two devices.
  double RouteLatency(int64_t from, int64_t to) const;

 private:
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<simgrid::s4u::Host*> hosts_;
  class Zone;
  Zone* zone_ = nullptr;
};

}  // namespace shardlab::sim
