#include "core/cost/collective_cost.h"

#include <cmath>

#include <catch2/catch.hpp>

#include "core/cost/expert_dispatch.h"
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

TEST_CASE("a flex dispatch sends a token once to each server of its experts, fewer under group-limited routing") {
  // DeepSeek-V3: 256 experts over 8 servers, 8 per token within 4 of 8 groups (one group a server): a
  // token reaches a given server with its group, 1 - C(7,4)/C(8,4) = 1/2; 3.5 servers of 7 cross, against
  // the AlltoAll's 8 x 7/8 = 7 copies.
  ExpertRouting deepseek{256, 8, 8, 4, 1.0};
  CHECK(ServerHitProbability(deepseek, 8) == Approx(0.5));
  CHECK(FlexCrossingShare(deepseek, 8) == Approx(0.5));
  // Without groups: 1 - C(224,8)/C(256,8) of the servers.
  ExpertRouting uniform{256, 8, 1, 1, 1.0};
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
  CHECK(ServerHitProbability(uniform, 8) == Approx(1 - miss));
  CHECK(FlexCrossingShare(uniform, 8) == Approx((1 - miss) * 8 / 8));
  // Capacity slots the AlltoAll sends and the flex dispatch does not.
  ExpertRouting padded = uniform;
  padded.capacity_factor = 1.25;
  CHECK(FlexCrossingShare(padded, 8) == Approx(FlexCrossingShare(uniform, 8) / 1.25));
  // Groups spanning two servers each (4 groups over 8 servers), 2 chosen: the server's group with 1/2,
  // then 8 of the chosen 128 experts reach its 32 or not.
  ExpertRouting wide{256, 8, 4, 2, 1.0};
  double wide_miss = 1;
  for (int i = 0; i < 8; ++i) wide_miss *= (96.0 - i) / (128.0 - i);
  CHECK(ServerHitProbability(wide, 8) == Approx(0.5 * (1 - wide_miss)));
  // Top-1 gains nothing; one server has nothing to cross.
  CHECK(FlexCrossingShare({64, 1, 1, 1, 1.0}, 8) == Approx(1));
  CHECK(FlexCrossingShare(deepseek, 1) == 1);
}

TEST_CASE("a flex dispatch's AlltoAll crosses its share and forwards the rest over the server's links") {
  ClusterSpec gpu = testing::ShippedCluster("dgx-h100-ndr");
  gpu.device.compute_capability = 0;                           // the links' alpha-beta
  const GroupPlacement ep = PlaceStridedGroup(0, 64, 1, gpu);  // 8 servers of 8
  REQUIRE(ep.servers == 8);
  const double s = 1 << 30;
  const double latency = CollectiveSeconds(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, 0, ep, gpu);
  const double direct = CollectiveSeconds(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, s, ep, gpu) - latency;
  const double flex =
      CollectiveSeconds(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, s, ep, gpu, 0.5) - latency;
  // The NICs bind both: 56/64 of the buffer crosses, or half of it.
  CHECK(flex == Approx(0.5 * direct));
  // Forwarded, 7/8 of the buffer goes over NVLink: with the NICs 10x faster than NVLink, NVLink binds,
  // where the direct exchange sends only 7/64 over it.
  ClusterSpec fast_nics = gpu;
  fast_nics.inter_server.nic_bandwidth = 10 * 450e9 * 8 / static_cast<double>(fast_nics.inter_server.nics_per_server);
  const double nvlink = IntraServerLink(ep, fast_nics, Collective::kAllToAll).bandwidth;
  const double fast_latency =
      CollectiveSeconds(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, 0, ep, fast_nics);
  CHECK(CollectiveSeconds(Collective::kAllToAll, CollectiveAlgorithm::kPairwise, s, ep, fast_nics, 0.5) -
            fast_latency ==
        Approx(7.0 / 8 * s / nvlink));
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

TEST_CASE("HCCL's hierarchical AllReduce runs each Atlas A2 server's level as its full mesh") {
  // 2 servers of 8 Ascend 910B: a mesh reduce-scatter over the 28 GB/s HCCS
  // links, halving-doubling of S/8 between the servers over each NPU's 200 GbE
  // port, a mesh all-gather. The server level as a ring would run on one link.
  const ClusterSpec a2 = testing::ShippedCluster("atlas800t-a2-910b");
  const GroupPlacement two = PlaceStridedGroup(0, 16, 1, a2);
  REQUIRE(ChooseAlgorithm(Collective::kAllReduce, 1e9, two, a2) == CollectiveAlgorithm::kHierarchical);
  CHECK(MeshServerLevel(two, a2));
  const double s = 1 << 30, link = a2.intra_server.link_bandwidth, alpha = a2.intra_server.latency;
  const Link nic = InterServerLink(two, a2);
  const CollectiveTiming t = TimeCollective(Collective::kAllReduce, CollectiveAlgorithm::kHierarchical, s, two, a2);
  CHECK(t.library.mesh_server_level);
  CHECK(t.seconds == Approx(s / 8 / link + alpha + (s / 8) / nic.bandwidth + 2 * nic.latency + s / 8 / link + alpha));
  // The 910's servers hold two meshes of 4: their server level stays a ring.
  const ClusterSpec a910 = testing::ShippedCluster("ascend910-atlas900");
  const GroupPlacement across = PlaceStridedGroup(0, 16, 1, a910);
  CHECK_FALSE(MeshServerLevel(across, a910));
  CHECK_FALSE(TimeCollective(Collective::kAllReduce, CollectiveAlgorithm::kHierarchical, s, across, a910)
                  .library.mesh_server_level);
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
