// Link usage as SimGrid runs flows: bytes land on the links of their routes,
// per class of links, conserved across the time bins, with the busiest link
// named. One SimGrid engine per process: every test case runs in its own
// ctest process.
#include "sim/link_usage.h"

#include <numeric>

#include <catch2/catch.hpp>
#include <simgrid/s4u/Engine.hpp>

#include "sim/cluster_platform.h"
#include "sim/flow_runner.h"
#include "tests/test_util.h"

namespace shardlab::sim {
namespace {

const LinkClassUsage* ClassNamed(const std::vector<LinkClassUsage>& usage, const std::string& name) {
  for (const LinkClassUsage& u : usage)
    if (u.name == name) return &u;
  return nullptr;
}

// Bytes a class carried, from its utilisation bins.
double CarriedBytes(const LinkClassUsage& u, double step) {
  double bytes = 0;
  for (size_t b = 0; b < u.utilisation.size(); ++b) {
    const double width = std::min(u.bin_seconds, step - static_cast<double>(b) * u.bin_seconds);
    bytes += u.utilisation[b] * u.bandwidth * static_cast<double>(u.links) * width;
  }
  return bytes;
}

TEST_CASE("a flow between two servers loads both NICs and its bins conserve its bytes") {
  const ClusterSpec cluster = testing::ShippedCluster("dgx-h100-ndr");
  ClusterPlatform platform(cluster, 16);
  LinkUsageRecorder usage(platform);
  const double bytes = 1e9, nic = cluster.inter_server.nic_bandwidth;
  usage.AddFlow(0, 8, bytes, 0.01, 0.01 + bytes / nic);  // device 0 of server 0 to device 0 of server 1
  const double step = 0.2;
  const std::vector<LinkClassUsage> result = usage.Result(step);
  // Only the NICs carried anything: the two servers share a leaf, NVSwitch ports stay idle.
  REQUIRE(result.size() == 1);
  const LinkClassUsage& nics = result.front();
  CHECK(nics.name == "NIC links");
  CHECK(nics.links == 2 * 2 * cluster.inter_server.nics_per_server);
  // Up on server 0 and down on server 1: twice the flow's bytes over the class.
  CHECK(CarriedBytes(nics, step) == Approx(2 * bytes).epsilon(1e-9));
  CHECK(nics.peak_utilisation == Approx(2.0 / static_cast<double>(nics.links)).epsilon(0.02));
  CHECK(nics.mean_utilisation == Approx(2 * bytes / (nic * static_cast<double>(nics.links) * step)).epsilon(1e-9));
  CHECK(nics.busiest == "nic-up-0");
  CHECK(nics.busiest_utilisation == Approx(bytes / (nic * step)).epsilon(1e-9));
  // Every link counted once by its own utilisation: the two busy NICs (about 25%) among idle ones.
  const double busy = bytes / (nic * step);
  REQUIRE(nics.links_by_utilisation.size() == 10);
  CHECK(std::accumulate(nics.links_by_utilisation.begin(), nics.links_by_utilisation.end(), int64_t{0}) ==
        nics.links);
  CHECK(nics.links_by_utilisation[static_cast<size_t>(busy * 10)] == 2);
  CHECK(nics.links_by_utilisation[0] == nics.links - 2);
}

TEST_CASE("a multi-plane fabric forwards traffic to another plane through the source server") {
  ClusterSpec cluster = testing::ShippedCluster("dgx-h100-ndr");
  cluster.inter_server.multi_plane = true;
  ClusterPlatform platform(cluster, 28);  // the last server half used
  std::vector<int32_t> route;
  auto names = [&](int64_t from, int64_t to) {
    platform.UnfoldedRoute(from, to, &route);
    std::vector<std::string> out;
    for (int32_t link : route) out.push_back(platform.LinkName(link));
    return out;
  };
  // Device 7 of server 0 to device 0 of server 1: over NVSwitch to device 0, then on plane 0.
  CHECK(names(7, 8) == std::vector<std::string>{"nvswitch-up-7", "nvswitch-down-0", "nic-up-0", "nic-down-8"});
  // Same plane: straight through the network, as rail-optimised.
  CHECK(names(3, 11) == std::vector<std::string>{"nic-up-3", "nic-down-11"});
  // Inside a server nothing changes.
  CHECK(names(7, 0) == std::vector<std::string>{"nvswitch-up-7", "nvswitch-down-0"});
  // The relay may be a slot of the last server the platform does not simulate.
  CHECK(names(25, 6) == std::vector<std::string>{"nvswitch-up-25", "nvswitch-down-30", "nic-up-30", "nic-down-6"});
}

TEST_CASE("flows that outlast the first bins widen them and keep every byte") {
  const ClusterSpec cluster = testing::ShippedCluster("dgx-h100-ndr");
  ClusterPlatform platform(cluster, 8);
  LinkUsageRecorder usage(platform);
  usage.AddFlow(0, 1, 4e9, 0, 0.01);
  usage.AddFlow(2, 3, 8e9, 1.0, 3.0);  // far beyond 256 bins of 0.1 ms
  const std::vector<LinkClassUsage> result = usage.Result(3.0);
  REQUIRE(result.size() == 1);
  const LinkClassUsage& ports = result.front();
  CHECK(ports.name == "NVSwitch ports");
  CHECK(ports.bin_seconds * 256 >= 3.0);
  CHECK(ports.utilisation.size() <= 256);
  CHECK(CarriedBytes(ports, 3.0) == Approx(2 * (4e9 + 8e9)).epsilon(1e-9));
}

TEST_CASE("the flow runner records the flows SimGrid ran at their simulated times") {
  const ClusterSpec cluster = testing::ShippedCluster("dgx-h100-ndr");
  ClusterPlatform platform(cluster, 16);
  FlowRunner runner(platform);
  LinkUsageRecorder usage(platform);
  runner.RecordLinkUsage(&usage);
  Phase phase;
  phase.flows = {{0, 8, 5e8}, {8, 0, 5e8}};
  double end = 0;
  runner.Run({phase}, [&end] { end = simgrid::s4u::Engine::get_clock(); });
  platform.engine().run();
  const std::vector<LinkClassUsage> result = usage.Result(end);
  const LinkClassUsage* nics = ClassNamed(result, "NIC links");
  REQUIRE(nics);
  CHECK(CarriedBytes(*nics, end) == Approx(4 * 5e8).epsilon(1e-6));
  // Both directions ran at the NIC's full bandwidth for the whole step.
  CHECK(nics->busiest_utilisation == Approx(1.0).epsilon(0.02));
}

}  // namespace
}  // namespace shardlab::sim
