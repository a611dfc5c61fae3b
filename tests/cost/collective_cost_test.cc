#include "core/cost/collective_cost.h"

#include <catch2/catch.hpp>

#include "core/util/json_reader.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

TEST_CASE("a ring AllReduce is 2(n-1)/n S/B + 2(n-1) alpha") {
  ClusterSpec gpu = testing::ShippedCluster("dgx-a100-hdr");
  gpu.device.compute_capability = 0;  // the links' alpha-beta, not NCCL's model
  const GroupPlacement server = PlaceStridedGroup(0, 8, 1, gpu);
  CHECK(server.servers == 1);
  const double s = 1 << 30;
  const double expected = 2.0 * 7 / 8 * s / 300e9 + 2 * 7 * 2e-6;
  CHECK(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, s, server, gpu) == Approx(expected));
}

TEST_CASE("placement finds servers, HCCS groups and leaf switches") {
  const ClusterSpec ascend = testing::ShippedCluster("ascend910-atlas900");
  CHECK(PlaceStridedGroup(0, 4, 1, ascend).one_hccs_group);
  CHECK_FALSE(PlaceStridedGroup(0, 8, 1, ascend).one_hccs_group);
  const GroupPlacement rail = PlaceStridedGroup(0, 32, 8, ascend);  // one device per server
  CHECK(rail.servers == 32);
  CHECK(rail.per_server == 1);
  // A group spanning both HCCS groups runs at the slower of HCCS and the cross-group path.
  CHECK(IntraServerLink(PlaceStridedGroup(0, 8, 1, ascend), ascend).bandwidth == Approx(30e9));
}

TEST_CASE("HCCL picks halving-doubling across a power-of-two number of servers, hierarchically inside") {
  const ClusterSpec ascend = testing::ShippedCluster("ascend910-atlas900");
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e8, PlaceStridedGroup(0, 32, 8, ascend), ascend) ==
        CollectiveAlgorithm::kHalvingDoubling);
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e8, PlaceStridedGroup(0, 24, 8, ascend), ascend) ==
        CollectiveAlgorithm::kRing);
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e8, PlaceStridedGroup(0, 64, 1, ascend), ascend) ==
        CollectiveAlgorithm::kHierarchical);
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e8, PlaceStridedGroup(0, 64, 1, ascend), ascend,
                        {{Collective::kAllReduce, CollectiveAlgorithm::kRing}}) == CollectiveAlgorithm::kRing);
}

TEST_CASE("NCCL picks the tree for small messages across nodes and the ring for large ones") {
  const ClusterSpec gpu = testing::ShippedCluster("dgx-h100-ndr");
  const GroupPlacement nodes = PlaceStridedGroup(0, 256, 8, gpu);
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e4, nodes, gpu) == CollectiveAlgorithm::kDoubleBinaryTree);
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e4, PlaceStridedGroup(0, 8, 1, gpu), gpu) ==
        CollectiveAlgorithm::kRing);
}

TEST_CASE("NCCL's AllToAll sends at its point-to-point speed: 371 GB/s of NVLink, a 400 Gb/s NIC's 48 GB/s") {
  const ClusterSpec gpu = testing::ShippedCluster("dgx-h100-ndr");
  const double s = 1 << 30;
  auto bus_bandwidth = [&](const GroupPlacement& p) {
    const CollectiveTiming t = TimeCollective(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, s, p, gpu);
    CHECK(t.library.timed);
    CHECK(t.library.wire_factor > 1);  // slower than the links' line rate
    const double n = static_cast<double>(p.size);
    return (n - 1) / n * s / (t.seconds - t.library.latency);
  };
  // Inside a server: 18 NVLinks at NCCL's 20.6 GB/s, not the 450 GB/s line rate.
  CHECK(bus_bandwidth(PlaceStridedGroup(0, 8, 1, gpu)) == Approx(18 * 20.6e9));
  // One GPU per server: each sends the rest through its own NIC.
  CHECK(bus_bandwidth(PlaceStridedGroup(0, 16, 8, gpu)) == Approx(48e9));
}

TEST_CASE("HCCL runs a group inside one HCCS full mesh over all its links at once") {
  // Atlas 800T A2: 8 Ascend 910B in one full mesh of 28 GB/s links. A ring
  // would use one link per rank; the mesh sends S/8 to each of 7 peers at once.
  const ClusterSpec a2 = testing::ShippedCluster("atlas800t-a2-910b");
  const GroupPlacement server = PlaceStridedGroup(0, 8, 1, a2);
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e9, server, a2) == CollectiveAlgorithm::kFullMesh);
  CHECK(ChooseAlgorithm(Collective::kAllToAll, 1e9, server, a2) == CollectiveAlgorithm::kFullMesh);
  const double s = 1 << 30, link = a2.intra_server.link_bandwidth, alpha = a2.intra_server.latency;
  CHECK(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kFullMesh, s, server, a2) ==
        Approx(2 * s / 8 / link + 2 * alpha));
  CHECK(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, s, server, a2) >
        6 * CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kFullMesh, s, server, a2));
  // The Ascend 910's two 4-device meshes: a group spanning both rings.
  const ClusterSpec a910 = testing::ShippedCluster("ascend910-atlas900");
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e9, PlaceStridedGroup(0, 8, 1, a910), a910) ==
        CollectiveAlgorithm::kRing);
  CHECK(ChooseAlgorithm(Collective::kAllReduce, 1e9, PlaceStridedGroup(0, 4, 1, a910), a910) ==
        CollectiveAlgorithm::kFullMesh);
}

TEST_CASE("hierarchical AllReduce beats a flat ring across servers") {
  const ClusterSpec ascend = testing::ShippedCluster("ascend910-atlas900");
  const GroupPlacement all = PlaceStridedGroup(0, 4096, 1, ascend);
  const double flat = CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kRing, 1 << 30, all, ascend);
  const double hier =
      CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kHierarchical, 1 << 30, all, ascend);
  CHECK(hier < flat);
}

}  // namespace
}  // namespace shardlab
