// The SimGrid platform of a cluster, built in code from a ClusterSpec: one
// host per device; inside a server NVSwitch ports (up and down per device) or
// HCCS full-mesh groups (one link per ordered pair) with a shared path
// between the groups; per-device NICs (shared when a server has fewer NICs
// than devices) into a fat tree whose leaf and pod switches are aggregated
// up and down links carrying the oversubscribed capacity. Routes are computed
// arithmetically by a custom zone, so 4096 hosts build in milliseconds.
// A group of symmetries of the platform can fold it: the links of an orbit
// become one, which one flow per device orbit loads as the orbit's flows
// would load them all.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/config/cluster_config.h"

namespace simgrid::s4u {
class Engine;
class Host;
}  // namespace simgrid::s4u

namespace shardlab::sim {

// A permutation of the devices: for each rank, the rank it maps to.
using DevicePermutation = std::vector<int64_t>;

class ClusterPlatform {
 public:
  // Creates the SimGrid engine (one per process) with alpha-beta link
  // semantics (CM02, no cross traffic, no TCP window) and the platform of the
  // first `devices` devices of the cluster.
  ClusterPlatform(const ClusterSpec& cluster, int64_t devices);
  ~ClusterPlatform();
  ClusterPlatform(const ClusterPlatform&) = delete;
  ClusterPlatform& operator=(const ClusterPlatform&) = delete;

  // SimGrid's hosts and links are created when first asked for, after any
  // Fold, and only the links a route can then take: a folded platform of
  // 65,536 devices creates the links of its orbits, not the 270 k of the fabric.
  simgrid::s4u::Engine& engine();
  simgrid::s4u::Host* host(int64_t rank);
  // Sum of the latencies on the route between two devices.
  double RouteLatency(int64_t from, int64_t to) const;

  // The links a utilisation report groups, by level of the fabric (NVSwitch
  // ports, HCCS mesh, NICs, leaf and spine uplinks), up and down together;
  // after Fold, only each orbit's link. Levels without links are left out.
  struct LinkClass {
    std::string name;
    std::vector<int32_t> links;     // after Fold, one per orbit
    std::vector<int32_t> unfolded;  // every link, as before folding
  };
  std::vector<LinkClass> LinkClasses() const;
  // The links from one device to another (after Fold, each orbit's link).
  void Route(int64_t from, int64_t to, std::vector<int32_t>* links) const;
  // The links from one device to another as if nothing were folded.
  void UnfoldedRoute(int64_t from, int64_t to, std::vector<int32_t>* links) const;
  int32_t FoldedLink(int32_t link) const;  // its orbit's link (itself when not folded)
  int32_t LinkCount() const;
  double LinkBandwidth(int32_t link) const;      // after Fold, the orbit's share
  double UnfoldedBandwidth(int32_t link) const;  // the link's own
  std::string LinkName(int32_t link) const;
  // The order of the group Fold folded by (1 when not folded): a folded
  // link's bandwidth is its orbit's total over it.
  int64_t fold_order() const { return fold_order_; }

  // Why `g` is not a symmetry of the platform: a symmetry maps every route
  // onto the route between the images of its ends, link for link, each onto
  // a link of the same bandwidth and latency, and no two links onto one.
  // Empty when it is one; then `link_image` (when given) holds each link's image.
  std::string CheckSymmetry(const DevicePermutation& g, std::vector<int32_t>* link_image = nullptr) const;
  // Folds each orbit of links under the group that `generators` (symmetries)
  // generate into its first link, whose bandwidth becomes the orbit's total
  // over `order`; before engine() or host(). The group must act freely on the devices with `order`
  // elements: then one flow per device orbit, its source the orbit's
  // representative, loads each folded link as the orbit's flows load its links.
  void Fold(const std::vector<DevicePermutation>& generators, int64_t order);

 private:
  void Seal();  // creates the hosts and links once

  std::unique_ptr<simgrid::s4u::Engine> engine_;
  int64_t devices_ = 0;
  bool sealed_ = false;
  std::vector<simgrid::s4u::Host*> hosts_;  // empty until Seal
  int64_t devices_per_server_ = 1;
  int64_t fold_order_ = 1;
  std::vector<double> unfolded_bandwidth_;  // per link, saved by Fold
  class Zone;
  Zone* zone_ = nullptr;
};

}  // namespace shardlab::sim
