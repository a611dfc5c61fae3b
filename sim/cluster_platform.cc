#include "sim/cluster_platform.h"

#include <fmt/format.h>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/log.h>

#include "core/util/interrupt.h"

namespace shardlab::sim {

namespace sg4 = simgrid::s4u;
namespace routing = simgrid::kernel::routing;

class ClusterPlatform::Zone : public routing::NetZoneImpl {
 public:
  Zone(const ClusterSpec& cluster, int64_t devices) : NetZoneImpl("cluster"), c_(cluster) {
    const int64_t dps = cluster.devices_per_server;
    servers_ = (devices + dps - 1) / dps;
    const auto& intra = cluster.intra_server;
    const auto& net = cluster.inter_server;
    nics_ = net.nics_per_server;
    auto link = [this](const std::string& name, double bandwidth, double latency) {
      sg4::Link* l = get_iface()->create_link(name, bandwidth);
      l->set_latency(latency);
      return l;
    };
    for (int64_t d = 0; d < devices; ++d) {
      if (intra.kind == IntraServerFabric::Kind::kNvSwitch) {
        port_up_.push_back(link(fmt::format("nvswitch-up-{}", d), intra.link_bandwidth, intra.latency / 2));
        port_down_.push_back(link(fmt::format("nvswitch-down-{}", d), intra.link_bandwidth, intra.latency / 2));
      }
    }
    if (intra.kind == IntraServerFabric::Kind::kHccsMesh) {
      const int64_t g = intra.group_size;
      mesh_.resize(servers_ * dps * g);
      for (int64_t d = 0; d < servers_ * dps; ++d)
        for (int64_t peer = 0; peer < g; ++peer)
          if (peer != d % g)
            mesh_[d * g + peer] = link(fmt::format("hccs-{}-{}", d, peer), intra.link_bandwidth, intra.latency);
      if (g < dps)
        for (int64_t s = 0; s < servers_; ++s)
          for (int64_t dir = 0; dir < 2; ++dir)
            cross_.push_back(
                link(fmt::format("cross-group-{}-{}", s, dir), intra.cross_group_bandwidth, intra.latency));
    }
    for (int64_t n = 0; n < servers_ * nics_; ++n) {
      nic_up_.push_back(link(fmt::format("nic-up-{}", n), net.nic_bandwidth, net.link_latency + net.switch_latency));
      nic_down_.push_back(link(fmt::format("nic-down-{}", n), net.nic_bandwidth, net.link_latency));
    }
    // Leaf switches: half their ports face down. Rail-optimised leaves take
    // NIC i of many servers; otherwise all NICs of fewer servers.
    const int64_t down = std::max<int64_t>(net.switch_radix / 2, 1);
    servers_per_leaf_ = net.rail_optimized ? down : std::max<int64_t>(down / nics_, 1);
    const int64_t leaf_groups = (servers_ + servers_per_leaf_ - 1) / servers_per_leaf_;
    leaves_ = net.rail_optimized ? leaf_groups * nics_ : leaf_groups;
    const double leaf_capacity = static_cast<double>(down) * net.nic_bandwidth / net.oversubscription;
    for (int64_t l = 0; l < leaves_; ++l) {
      leaf_up_.push_back(link(fmt::format("leaf-up-{}", l), leaf_capacity, net.link_latency + net.switch_latency));
      leaf_down_.push_back(link(fmt::format("leaf-down-{}", l), leaf_capacity, net.link_latency + net.switch_latency));
    }
    if (net.levels >= 3) {
      leaves_per_pod_ = down;
      const int64_t pods = (leaves_ + leaves_per_pod_ - 1) / leaves_per_pod_;
      const double pod_capacity = leaf_capacity * static_cast<double>(leaves_per_pod_);
      for (int64_t p = 0; p < pods; ++p) {
        pod_up_.push_back(link(fmt::format("pod-up-{}", p), pod_capacity, net.link_latency + net.switch_latency));
        pod_down_.push_back(link(fmt::format("pod-down-{}", p), pod_capacity, net.link_latency + net.switch_latency));
      }
    }
  }

  void Route(int64_t a, int64_t b, std::vector<sg4::Link*>* links) const {
    const int64_t dps = c_.devices_per_server;
    const int64_t sa = a / dps, sb = b / dps;
    if (sa == sb) {
      if (c_.intra_server.kind == IntraServerFabric::Kind::kNvSwitch) {
        links->push_back(port_up_[a]);
        links->push_back(port_down_[b]);
        return;
      }
      const int64_t g = c_.intra_server.group_size;
      if (a / g == b / g) {
        links->push_back(mesh_[a * g + b % g]);
      } else {
        links->push_back(cross_[sa * 2 + ((a % dps) / g < (b % dps) / g ? 0 : 1)]);
      }
      return;
    }
    const int64_t na = Nic(a), nb = Nic(b);
    links->push_back(nic_up_[na]);
    const int64_t la = Leaf(a), lb = Leaf(b);
    if (la != lb) {
      links->push_back(leaf_up_[la]);
      if (!pod_up_.empty() && la / leaves_per_pod_ != lb / leaves_per_pod_) {
        links->push_back(pod_up_[la / leaves_per_pod_]);
        links->push_back(pod_down_[lb / leaves_per_pod_]);
      }
      links->push_back(leaf_down_[lb]);
    }
    links->push_back(nic_down_[nb]);
  }

 protected:
  void get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst, routing::Route* into,
                       double* latency) override {
    std::vector<sg4::Link*> links;
    Route(static_cast<int64_t>(src->id()), static_cast<int64_t>(dst->id()), &links);
    for (sg4::Link* l : links) {
      into->link_list_.push_back(l->get_impl());
      if (latency) *latency += l->get_latency();
    }
  }

 private:
  int64_t Nic(int64_t device) const {
    const int64_t dps = c_.devices_per_server;
    return (device / dps) * nics_ + (device % dps) * nics_ / dps;
  }
  int64_t Leaf(int64_t device) const {
    const int64_t server = device / c_.devices_per_server;
    const int64_t group = server / servers_per_leaf_;
    if (!c_.inter_server.rail_optimized) return group;
    return group * nics_ + (device % c_.devices_per_server) * nics_ / c_.devices_per_server;
  }

  const ClusterSpec& c_;
  int64_t servers_ = 0, nics_ = 1, servers_per_leaf_ = 1, leaves_ = 1, leaves_per_pod_ = 1;
  std::vector<sg4::Link*> port_up_, port_down_, mesh_, cross_, nic_up_, nic_down_, leaf_up_, leaf_down_, pod_up_,
      pod_down_;
};

ClusterPlatform::ClusterPlatform(const ClusterSpec& cluster, int64_t devices) {
  int argc = 1;
  char name[] = "shardlab";
  char* argv[] = {name, nullptr};
  engine_ = std::make_unique<sg4::Engine>(&argc, argv);
  InstallInterruptHandlers();  // the engine replaced SIGINT's handler with one that crashes in shutdown
  xbt_log_control_set("root.thres:critical");
  // Links behave as alpha-beta pipes: no TCP slow-start factors, no reverse
  // ACK traffic, no window bound on long routes.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  zone_ = new Zone(cluster, devices);
  for (int64_t d = 0; d < devices; ++d)
    hosts_.push_back(zone_->get_iface()->create_host(fmt::format("device-{}", d), 1e12));
  zone_->get_iface()->seal();
}

ClusterPlatform::~ClusterPlatform() = default;

double ClusterPlatform::RouteLatency(int64_t from, int64_t to) const {
  std::vector<sg4::Link*> links;
  zone_->Route(from, to, &links);
  double latency = 0;
  for (sg4::Link* l : links) latency += l->get_latency();
  return latency;
}

}  // namespace shardlab::sim
