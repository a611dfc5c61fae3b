#include "sim/cluster_platform.h"

#include <numeric>
#include <stdexcept>

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
    auto link = [this](Level level, int64_t index, double bandwidth, double latency) {
      specs_.push_back({level, index, bandwidth, latency});
      return static_cast<int32_t>(specs_.size() - 1);
    };
    // Every slot of the last server has its ports, used or not: a multi-plane
    // route may relay through a device the platform does not simulate.
    for (int64_t d = 0; d < servers_ * dps; ++d) {
      if (intra.kind == IntraServerFabric::Kind::kNvSwitch) {
        port_up_.push_back(link(Level::kPortUp, d, intra.link_bandwidth, intra.latency / 2));
        port_down_.push_back(link(Level::kPortDown, d, intra.link_bandwidth, intra.latency / 2));
      }
    }
    if (intra.kind == IntraServerFabric::Kind::kHccsMesh) {
      const int64_t g = intra.group_size;
      mesh_.assign(servers_ * dps * g, -1);
      for (int64_t d = 0; d < servers_ * dps; ++d)
        for (int64_t peer = 0; peer < g; ++peer)
          if (peer != d % g)
            mesh_[d * g + peer] = link(Level::kMesh, d * g + peer, intra.link_bandwidth, intra.latency);
      if (g < dps)
        for (int64_t s = 0; s < servers_; ++s)
          for (int64_t dir = 0; dir < 2; ++dir)
            cross_.push_back(link(Level::kCross, s * 2 + dir, intra.cross_group_bandwidth, intra.latency));
    }
    for (int64_t n = 0; n < servers_ * nics_; ++n) {
      nic_up_.push_back(link(Level::kNicUp, n, net.nic_bandwidth, net.link_latency + net.switch_latency));
      nic_down_.push_back(link(Level::kNicDown, n, net.nic_bandwidth, net.link_latency));
    }
    // Leaf switches: half their ports face down. Rail-optimised leaves take
    // NIC i of many servers; otherwise all NICs of fewer servers.
    const int64_t down = std::max<int64_t>(net.switch_radix / 2, 1);
    servers_per_leaf_ = net.rail_optimized ? down : std::max<int64_t>(down / nics_, 1);
    const int64_t leaf_groups = (servers_ + servers_per_leaf_ - 1) / servers_per_leaf_;
    leaves_ = net.rail_optimized ? leaf_groups * nics_ : leaf_groups;
    const double leaf_capacity = static_cast<double>(down) * net.nic_bandwidth / net.oversubscription;
    for (int64_t l = 0; l < leaves_; ++l) {
      leaf_up_.push_back(link(Level::kLeafUp, l, leaf_capacity, net.link_latency + net.switch_latency));
      leaf_down_.push_back(link(Level::kLeafDown, l, leaf_capacity, net.link_latency + net.switch_latency));
    }
    if (net.levels >= 3) {
      leaves_per_pod_ = down;
      // Multi-plane: each plane's leaves form its own pods.
      const int64_t pods =
          net.multi_plane ? (leaf_groups + down - 1) / down * nics_ : (leaves_ + leaves_per_pod_ - 1) / leaves_per_pod_;
      const double pod_capacity = leaf_capacity * static_cast<double>(leaves_per_pod_) / net.spine_oversubscription;
      for (int64_t p = 0; p < pods; ++p) {
        pod_up_.push_back(link(Level::kPodUp, p, pod_capacity, net.link_latency + net.switch_latency));
        pod_down_.push_back(link(Level::kPodDown, p, pod_capacity, net.link_latency + net.switch_latency));
      }
    }
  }

  // A link of the fabric: its level and index there, bandwidth (after Fold,
  // its orbit's share) and latency.
  enum class Level : uint8_t {
    kPortUp,
    kPortDown,
    kMesh,
    kCross,
    kNicUp,
    kNicDown,
    kLeafUp,
    kLeafDown,
    kPodUp,
    kPodDown
  };
  struct LinkSpec {
    Level level;
    int64_t index;
    double bandwidth;
    double latency;
  };

  std::string Name(int32_t id) const {
    const LinkSpec& l = specs_[id];
    const int64_t g = c_.intra_server.group_size;
    switch (l.level) {
      case Level::kPortUp:
        return fmt::format("nvswitch-up-{}", l.index);
      case Level::kPortDown:
        return fmt::format("nvswitch-down-{}", l.index);
      case Level::kMesh:
        return fmt::format("hccs-{}-{}", l.index / g, l.index % g);
      case Level::kCross:
        return fmt::format("cross-group-{}-{}", l.index / 2, l.index % 2);
      case Level::kNicUp:
        return fmt::format("nic-up-{}", l.index);
      case Level::kNicDown:
        return fmt::format("nic-down-{}", l.index);
      case Level::kLeafUp:
        return fmt::format("leaf-up-{}", l.index);
      case Level::kLeafDown:
        return fmt::format("leaf-down-{}", l.index);
      case Level::kPodUp:
        return fmt::format("pod-up-{}", l.index);
      case Level::kPodDown:
        return fmt::format("pod-down-{}", l.index);
    }
    return {};
  }

  // SimGrid's links: one per link, or after Fold one per orbit, the only
  // links a route then takes.
  void CreateLinks() {
    links_.assign(specs_.size(), nullptr);
    for (size_t id = 0; id < specs_.size(); ++id) {
      if (Representative(static_cast<int32_t>(id)) != static_cast<int32_t>(id)) continue;
      links_[id] = get_iface()->create_link(Name(static_cast<int32_t>(id)), specs_[id].bandwidth);
      links_[id]->set_latency(specs_[id].latency);
    }
  }

  // The links from device a to device b, as indices into specs().
  void Route(int64_t a, int64_t b, std::vector<int32_t>* links) const {
    const int64_t dps = c_.devices_per_server;
    const int64_t sa = a / dps, sb = b / dps;
    if (sa != sb && c_.inter_server.multi_plane && Plane(a) != Plane(b)) {
      // No switch joins the planes: the source server's fabric carries the
      // data to its device on b's plane, which sends it (NCCL's PXN).
      const int64_t relay = Relay(sa, Plane(b));
      Route(a, relay, links);
      a = relay;
    }
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
      if (!pod_up_.empty() && Pod(a) != Pod(b)) {
        links->push_back(pod_up_[Pod(a)]);
        links->push_back(pod_down_[Pod(b)]);
      }
      links->push_back(leaf_down_[lb]);
    }
    links->push_back(nic_down_[nb]);
  }

 protected:
  void get_local_route(const routing::NetPoint* src, const routing::NetPoint* dst, routing::Route* into,
                       double* latency) override {
    std::vector<int32_t> links;
    Route(static_cast<int64_t>(src->id()), static_cast<int64_t>(dst->id()), &links);
    for (int32_t id : links) {
      sg4::Link* l = links_[Representative(id)];
      into->link_list_.push_back(l->get_impl());
      if (latency) *latency += l->get_latency();
    }
  }

 public:
  std::vector<LinkSpec>& specs() { return specs_; }
  const std::vector<LinkSpec>& specs() const { return specs_; }
  int64_t servers() const { return servers_; }
  // The link a route's link stands for: itself, or its orbit's link when folded.
  int32_t Representative(int32_t id) const { return folded_.empty() ? id : folded_[id]; }

  // The fabric's levels as classes of links, up and down together.
  std::vector<std::pair<std::string, std::vector<int32_t>>> Levels() const {
    auto both = [](const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
      std::vector<int32_t> all = a;
      all.insert(all.end(), b.begin(), b.end());
      return all;
    };
    return {{"NVSwitch ports", both(port_up_, port_down_)},
            {"HCCS mesh links", mesh_},
            {"HCCS cross-group links", cross_},
            {"NIC links", both(nic_up_, nic_down_)},
            {"leaf uplinks", both(leaf_up_, leaf_down_)},
            {"spine links", both(pod_up_, pod_down_)}};
  }

  // The links every route leaving or entering `device` through the network
  // (or its NVSwitch ports) takes, by level: their images under a device
  // permutation decide where it maps each link that depends on one end.
  void EndpointLinks(int64_t device, std::vector<int32_t>* links) const {
    links->clear();
    if (!port_up_.empty()) {
      links->push_back(port_up_[device]);
      links->push_back(port_down_[device]);
    }
    links->push_back(nic_up_[Nic(device)]);
    links->push_back(nic_down_[Nic(device)]);
    links->push_back(leaf_up_[Leaf(device)]);
    links->push_back(leaf_down_[Leaf(device)]);
    if (!pod_up_.empty()) {
      links->push_back(pod_up_[Pod(device)]);
      links->push_back(pod_down_[Pod(device)]);
    }
  }

  // Routes use folded[link] in place of link (empty: every link is its own).
  void Fold(std::vector<int32_t> folded) { folded_ = std::move(folded); }

  bool multi_plane() const { return c_.inter_server.multi_plane; }
  int64_t planes() const { return nics_; }
  // The NIC index within its server of a device's NIC: its rail, or plane.
  int64_t Plane(int64_t device) const { return (device % c_.devices_per_server) * nics_ / c_.devices_per_server; }
  // Multi-plane: whether `device` sends its server's traffic to its plane
  // (the first device of the server on that plane).
  bool IsRelay(int64_t device) const {
    const int64_t dps = c_.devices_per_server;
    return c_.inter_server.multi_plane && device == Relay(device / dps, Plane(device));
  }

 private:
  int64_t Relay(int64_t server, int64_t plane) const {
    const int64_t dps = c_.devices_per_server;
    return server * dps + (plane * dps + nics_ - 1) / nics_;
  }
  int64_t Pod(int64_t device) const {
    if (!c_.inter_server.multi_plane) return Leaf(device) / leaves_per_pod_;
    const int64_t group = device / c_.devices_per_server / servers_per_leaf_;
    return group / leaves_per_pod_ * nics_ + Plane(device);
  }
  int64_t Nic(int64_t device) const { return (device / c_.devices_per_server) * nics_ + Plane(device); }
  int64_t Leaf(int64_t device) const {
    const int64_t group = device / c_.devices_per_server / servers_per_leaf_;
    return c_.inter_server.rail_optimized ? group * nics_ + Plane(device) : group;
  }

  const ClusterSpec& c_;
  int64_t servers_ = 0, nics_ = 1, servers_per_leaf_ = 1, leaves_ = 1, leaves_per_pod_ = 1;
  std::vector<LinkSpec> specs_;    // by link id
  std::vector<sg4::Link*> links_;  // by link id, once created (CreateLinks)
  std::vector<int32_t> folded_;
  // Indices into specs_, per level of the fabric.
  std::vector<int32_t> port_up_, port_down_, mesh_, cross_, nic_up_, nic_down_, leaf_up_, leaf_down_, pod_up_,
      pod_down_;
};

ClusterPlatform::ClusterPlatform(const ClusterSpec& cluster, int64_t devices)
    : devices_per_server_(cluster.devices_per_server) {
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
  devices_ = devices;
}

void ClusterPlatform::Seal() {
  if (sealed_) return;
  sealed_ = true;
  zone_->CreateLinks();
  for (int64_t d = 0; d < devices_; ++d)
    hosts_.push_back(zone_->get_iface()->create_host(fmt::format("device-{}", d), 1e12));
  zone_->get_iface()->seal();
}

simgrid::s4u::Engine& ClusterPlatform::engine() {
  Seal();
  return *engine_;
}

simgrid::s4u::Host* ClusterPlatform::host(int64_t rank) {
  Seal();
  return hosts_.at(rank);
}

ClusterPlatform::~ClusterPlatform() = default;

std::vector<ClusterPlatform::LinkClass> ClusterPlatform::LinkClasses() const {
  std::vector<LinkClass> classes;
  for (auto& [name, ids] : zone_->Levels()) {
    LinkClass c{name, {}, {}};
    for (int32_t id : ids) {
      if (id < 0) continue;
      c.unfolded.push_back(id);
      if (zone_->Representative(id) == id) c.links.push_back(id);
    }
    if (!c.links.empty()) classes.push_back(std::move(c));
  }
  return classes;
}

void ClusterPlatform::Route(int64_t from, int64_t to, std::vector<int32_t>* links) const {
  links->clear();
  zone_->Route(from, to, links);
  for (int32_t& id : *links) id = zone_->Representative(id);
}

void ClusterPlatform::UnfoldedRoute(int64_t from, int64_t to, std::vector<int32_t>* links) const {
  links->clear();
  zone_->Route(from, to, links);
}

int32_t ClusterPlatform::FoldedLink(int32_t link) const { return zone_->Representative(link); }

int32_t ClusterPlatform::LinkCount() const { return static_cast<int32_t>(zone_->specs().size()); }

double ClusterPlatform::LinkBandwidth(int32_t link) const { return zone_->specs()[link].bandwidth; }

double ClusterPlatform::UnfoldedBandwidth(int32_t link) const {
  return unfolded_bandwidth_.empty() ? LinkBandwidth(link) : unfolded_bandwidth_[link];
}

std::string ClusterPlatform::LinkName(int32_t link) const { return zone_->Name(link); }

double ClusterPlatform::RouteLatency(int64_t from, int64_t to) const {
  std::vector<int32_t> links;
  zone_->Route(from, to, &links);
  double latency = 0;
  for (int32_t id : links) latency += zone_->specs()[id].latency;
  return latency;
}

std::string ClusterPlatform::CheckSymmetry(const DevicePermutation& g, std::vector<int32_t>* link_image) const {
  const auto& links = zone_->specs();
  std::vector<int32_t> image(links.size(), -1);
  std::string why;
  auto map = [&](int32_t from, int32_t to) {
    if (image[from] == to) return true;
    if (image[from] != -1) {
      why = fmt::format("link {} would map onto both {} and {}", zone_->Name(from), zone_->Name(image[from]),
                        zone_->Name(to));
      return false;
    }
    if (links[from].bandwidth != links[to].bandwidth || links[from].latency != links[to].latency) {
      why = fmt::format("link {} would map onto {}, whose bandwidth or latency differs", zone_->Name(from),
                        zone_->Name(to));
      return false;
    }
    image[from] = to;
    return true;
  };
  const int64_t devices = devices_;
  const int64_t dps = devices_per_server_;
  // Multi-plane: a route relays through the device of the destination's
  // plane in the source's server, so g must map relays onto relays and each
  // plane onto one plane everywhere.
  std::vector<int64_t> plane_image;
  for (int64_t d = 0; d < devices; ++d) {
    if (!zone_->multi_plane()) break;
    if (zone_->IsRelay(d) != zone_->IsRelay(g[d]))
      return fmt::format("device {} {} its server's traffic to its plane and device {} {}", d,
                         zone_->IsRelay(d) ? "forwards" : "does not forward", g[d],
                         zone_->IsRelay(g[d]) ? "does" : "does not");
    const int64_t plane = zone_->Plane(d);
    if (plane_image.empty()) plane_image.assign(static_cast<size_t>(zone_->planes()), -1);
    if (plane_image[plane] == -1) plane_image[plane] = zone_->Plane(g[d]);
    if (plane_image[plane] != zone_->Plane(g[d])) return fmt::format("it maps plane {} onto two planes", plane);
  }
  std::vector<int64_t> server_image(zone_->servers(), -1);
  std::vector<int32_t> here, there;
  for (int64_t d = 0; d < devices; ++d) {
    const int64_t server = d / dps, image_server = g[d] / dps;
    if (server_image[server] == -1) server_image[server] = image_server;
    if (server_image[server] != image_server) return fmt::format("it splits server {} over two servers", server);
    zone_->EndpointLinks(d, &here);
    zone_->EndpointLinks(g[d], &there);
    for (size_t i = 0; i < here.size(); ++i)
      if (!map(here[i], there[i])) return why;
  }
  for (int64_t first = 0; first < devices; first += dps) {
    const int64_t last = std::min(first + dps, devices);
    for (int64_t a = first; a < last; ++a)
      for (int64_t b = first; b < last; ++b) {
        if (a == b) continue;
        here.clear();
        there.clear();
        zone_->Route(a, b, &here);
        zone_->Route(g[a], g[b], &there);
        if (here.size() != there.size())
          return fmt::format("the route from device {} to {} does not map onto the route between their images", a, b);
        for (size_t i = 0; i < here.size(); ++i)
          if (!map(here[i], there[i])) return why;
      }
  }
  std::vector<char> taken(links.size(), 0);
  for (int32_t to : image) {
    if (to < 0) continue;
    if (taken[to]) return fmt::format("two links would map onto {}", zone_->Name(to));
    taken[to] = 1;
  }
  std::vector<char> server_taken(server_image.size(), 0);
  for (int64_t to : server_image) {
    if (to < 0) continue;
    if (server_taken[to]) return fmt::format("two servers would map onto server {}", to);
    server_taken[to] = 1;
  }
  if (link_image) *link_image = std::move(image);
  return {};
}

void ClusterPlatform::Fold(const std::vector<DevicePermutation>& generators, int64_t order) {
  if (sealed_) throw std::logic_error("folding a platform SimGrid already uses");
  auto& links = zone_->specs();
  std::vector<int32_t> root(links.size());
  std::iota(root.begin(), root.end(), 0);
  auto find = [&root](int32_t x) {
    while (root[x] != x) x = root[x] = root[root[x]];
    return x;
  };
  for (const DevicePermutation& g : generators) {
    std::vector<int32_t> image;
    const std::string why = CheckSymmetry(g, &image);
    if (!why.empty()) throw std::logic_error("folding the platform by a permutation that is not a symmetry: " + why);
    for (size_t l = 0; l < image.size(); ++l) {
      if (image[l] < 0) continue;
      const int32_t a = find(static_cast<int32_t>(l)), b = find(image[l]);
      if (a != b) root[std::max(a, b)] = std::min(a, b);
    }
  }
  std::vector<int64_t> orbit_size(links.size(), 0);
  std::vector<int32_t> folded(links.size());
  for (size_t l = 0; l < links.size(); ++l) {
    folded[l] = find(static_cast<int32_t>(l));
    ++orbit_size[folded[l]];
  }
  if (unfolded_bandwidth_.empty())
    for (const auto& link : links) unfolded_bandwidth_.push_back(link.bandwidth);
  for (size_t l = 0; l < links.size(); ++l)
    if (orbit_size[l] > 0) links[l].bandwidth *= static_cast<double>(orbit_size[l]) / static_cast<double>(order);
  zone_->Fold(std::move(folded));
  fold_order_ = order;
}

}  // namespace shardlab::sim
