#include "core/config/cluster_config.h"

#include "tests/test_util.h"

namespace shardlab {
namespace {

using testing::Doc;
using testing::ExpectConfigError;

// A valid cluster document to mutate in tests.
nlohmann::json SmallCluster() {
  return nlohmann::json::parse(R"({
    "name": "small", "servers": 2, "devices_per_server": 8,
    "device": {"kind": "npu", "model": "X", "peak_flops": {"float16": "100 TFLOP/s"}, "memory": "32 GB",
               "memory_bandwidth": "1 TB/s"},
    "host": {"cpu_flops": "1 TFLOP/s", "memory": "256 GB", "memory_bandwidth": "100 GB/s",
             "pcie_bandwidth": "16 GB/s", "pcie_latency": "2 us"},
    "intra_server": {"kind": "hccs_mesh", "group_size": 4, "link_bandwidth": "30 GB/s",
                     "cross_group_bandwidth": "16 GB/s", "latency": "1 us"},
    "inter_server": {"nic_bandwidth": "100 Gb/s", "topology": "fat_tree", "link_latency": "1 us",
                     "switch_latency": "0.5 us"}})");
}

std::string ErrorAt(const nlohmann::json& doc, const std::string& pointer) {
  const ConfigError e = ExpectConfigError([&] { ReadClusterSpec(JsonNode(doc, "cluster.json")); });
  CHECK(e.pointer() == pointer);
  return e.what();
}

TEST_CASE("shipped clusters load with their datasheet figures") {
  const ClusterSpec ascend = testing::ShippedCluster("ascend910-atlas900");
  CHECK(ascend.device_count() == 4096);
  CHECK(ascend.device.peak_flops.at(DType::kFloat16) == Approx(256e12));
  CHECK(ascend.device.memory_bytes == Approx(32e9));
  CHECK(ascend.intra_server.kind == IntraServerFabric::Kind::kHccsMesh);
  CHECK(ascend.intra_server.group_size == 4);
  CHECK(ascend.inter_server.nic_bandwidth == Approx(12.5e9));
  CHECK(ascend.inter_server.switch_latency == Approx(0.6e-6));

  const ClusterSpec a100 = testing::ShippedCluster("dgx-a100-hdr");
  CHECK(a100.device.peak_flops.at(DType::kBFloat16) == Approx(312e12));
  CHECK(a100.intra_server.kind == IntraServerFabric::Kind::kNvSwitch);
  CHECK(a100.inter_server.nic_bandwidth == Approx(25e9));
  CHECK(a100.inter_server.rail_optimized);

  const ClusterSpec h100 = testing::ShippedCluster("dgx-h100-ndr");
  CHECK(h100.device.peak_flops.at(DType::kFloat16) == Approx(989e12));
  CHECK(h100.device.peak_flops.at(DType::kFloat8E4M3) == Approx(1979e12));
  CHECK(h100.intra_server.link_bandwidth == Approx(450e9));

  const ClusterSpec h200 = testing::ShippedCluster("dgx-h200-ndr");
  // Device memory as CUDA and nvidia-smi report it, not the marketing GB.
  CHECK(h200.device.memory_bytes == 143771.0 * 1048576);
  CHECK(h100.device.memory_bytes == 81078.0 * 1048576);  // CUDA's 85,017,493,504 B, to the MiB
  CHECK(h200.device.memory_bandwidth == Approx(4.8e12));

  // Dense figures: half the sparse ones NVIDIA's tables quote.
  const ClusterSpec b200 = testing::ShippedCluster("dgx-b200-ndr");
  CHECK(b200.device.peak_flops.at(DType::kBFloat16) == Approx(2250e12));
  CHECK(b200.device.peak_flops.at(DType::kFloat8E4M3) == Approx(4500e12));
  CHECK(b200.intra_server.link_bandwidth == Approx(900e9));

  // One NVLink domain of 72 GPUs per rack.
  const ClusterSpec nvl72 = testing::ShippedCluster("gb200-nvl72");
  CHECK(nvl72.devices_per_server == 72);
  CHECK(nvl72.inter_server.nics_per_server == 72);
  CHECK(nvl72.device.peak_flops.at(DType::kBFloat16) == Approx(2500e12));

  const ClusterSpec a2 = testing::ShippedCluster("atlas800t-a2-910b");
  CHECK(a2.intra_server.kind == IntraServerFabric::Kind::kHccsMesh);
  CHECK(a2.intra_server.group_size == 8);
  CHECK(a2.device.memory_bandwidth == Approx(1.6 * 1099511627776.0));
  CHECK(a2.inter_server.nic_bandwidth == Approx(25e9));
  CHECK_FALSE(a2.device.peak_flops.count(DType::kFloat8E4M3));

  const ClusterSpec h800 = testing::ShippedCluster("deepseek-h800-2048");
  CHECK(h800.device_count() == 2048);
  CHECK(h800.intra_server.link_bandwidth == Approx(200e9));
  CHECK(h800.inter_server.multi_plane);  // one plane per GPU-NIC pair

  const ClusterSpec cm384 = testing::ShippedCluster("cloudmatrix384-910c");
  CHECK(cm384.devices_per_server == 384);
  CHECK(cm384.intra_server.link_bandwidth == Approx(392e9));
}

TEST_CASE("clusters round-trip through JSON") {
  for (const char* name : {"ascend910-atlas900", "dgx-a100-hdr", "dgx-h100-ndr", "dgx-h200-ndr", "dgx-b200-ndr",
                           "gb200-nvl72", "atlas800t-a2-910b", "deepseek-h800-2048", "cloudmatrix384-910c"}) {
    const ClusterSpec c = testing::ShippedCluster(name);
    const nlohmann::json j = ToJson(c);
    CHECK(ReadClusterSpec(JsonNode(j, "round.json")) == c);
  }
}

TEST_CASE("kernel_overhead 0, its documented default, may be written explicitly; negative is an error") {
  nlohmann::json doc = SmallCluster();
  doc["device"]["kernel_overhead"] = 0;
  CHECK(ReadClusterSpec(JsonNode(doc, "cluster.json")).device.kernel_overhead == 0);
  doc["device"]["kernel_overhead"] = "0 us";
  CHECK(ReadClusterSpec(JsonNode(doc, "cluster.json")).device.kernel_overhead == 0);
  doc["device"]["kernel_overhead"] = -1e-6;
  CHECK_THAT(ErrorAt(doc, "/device/kernel_overhead"), Catch::Contains("expected a non-negative quantity"));
}

TEST_CASE("nics default to one per device and defaults apply") {
  const ClusterSpec c = ReadClusterSpec(JsonNode(SmallCluster(), "cluster.json"));
  CHECK(c.inter_server.nics_per_server == 8);
  CHECK(c.inter_server.levels == 2);
  CHECK(c.device.compute_efficiency == 1.0);
}

TEST_CASE("cluster validation names the key and the rule") {
  auto doc = SmallCluster();
  doc["devices_per_server"] = 1025;
  CHECK_THAT(ErrorAt(doc, "/devices_per_server"), Catch::Contains("1024"));

  doc = SmallCluster();
  doc["servers"] = 1;
  doc["devices_per_server"] = 128;
  doc["intra_server"]["group_size"] = 128;
  CHECK_THAT(ErrorAt(doc, "/intra_server/group_size"), Catch::Contains("64"));

  doc = SmallCluster();
  doc["device"]["peak_flops"] = {{"fp16", "100 TFLOP/s"}};
  CHECK_THAT(ErrorAt(doc, "/device/peak_flops/fp16"), Catch::Contains("is not a dtype"));

  doc = SmallCluster();
  doc["device"]["peak_flops"] = nlohmann::json::object();
  CHECK_THAT(ErrorAt(doc, "/device/peak_flops"), Catch::Contains("at least one dtype"));

  doc = SmallCluster();
  doc["device"]["memory"] = "32 GBs";
  CHECK_THAT(ErrorAt(doc, "/device/memory"), Catch::Contains("GiB"));

  doc = SmallCluster();
  doc["device"]["memory_bandwidth"] = "1 TB";
  CHECK_THAT(ErrorAt(doc, "/device/memory_bandwidth"), Catch::Contains("units"));

  doc = SmallCluster();
  doc["host"]["pcie_latency"] = -1;
  CHECK_THAT(ErrorAt(doc, "/host/pcie_latency"), Catch::Contains("positive"));

  doc = SmallCluster();
  doc["device"]["compute_efficiency"] = 1.5;
  CHECK_THAT(ErrorAt(doc, "/device/compute_efficiency"), Catch::Contains("[0.001, 1]"));

  doc = SmallCluster();
  doc["device"]["kind"] = "tpu";
  CHECK_THAT(ErrorAt(doc, "/device/kind"), Catch::Contains(R"("npu", "gpu")"));

  doc = SmallCluster();
  doc["intra_server"]["group_size"] = 3;
  CHECK_THAT(ErrorAt(doc, "/intra_server/group_size"), Catch::Contains("does not divide devices_per_server 8"));

  doc = SmallCluster();
  doc["intra_server"].erase("cross_group_bandwidth");
  CHECK_THAT(ErrorAt(doc, "/intra_server"), Catch::Contains("cross_group_bandwidth"));

  doc = SmallCluster();
  doc["inter_server"]["nics_per_server"] = 9;
  CHECK_THAT(ErrorAt(doc, "/inter_server/nics_per_server"), Catch::Contains("1..8"));

  doc = SmallCluster();
  doc["inter_server"]["topology"] = "torus";
  CHECK_THAT(ErrorAt(doc, "/inter_server/topology"), Catch::Contains("fat_tree"));

  doc = SmallCluster();
  doc["inter_server"]["oversubscription"] = 0.5;
  CHECK_THAT(ErrorAt(doc, "/inter_server/oversubscription"), Catch::Contains("[1, 64]"));

  doc = SmallCluster();
  doc["servers"] = 512;
  doc["inter_server"]["levels"] = 1;
  CHECK_THAT(ErrorAt(doc, "/inter_server/levels"), Catch::Contains("connects at most 64 NICs, the cluster has 4096"));

  // Multi-plane: rail-optimised, and the tree's capacity is per plane (one NIC per server).
  doc = SmallCluster();
  doc["inter_server"]["multi_plane"] = true;
  doc["inter_server"]["rail_optimized"] = false;
  CHECK_THAT(ErrorAt(doc, "/inter_server/multi_plane"), Catch::Contains("set rail_optimized"));
  doc["servers"] = 512;
  doc["inter_server"]["rail_optimized"] = true;
  doc["inter_server"]["levels"] = 1;
  CHECK_THAT(ErrorAt(doc, "/inter_server/levels"),
             Catch::Contains("connects at most 64 NICs, the cluster has 512 per plane"));
  doc["inter_server"]["levels"] = 2;
  CHECK(ReadClusterSpec(JsonNode(doc, "multi-plane.json")).inter_server.multi_plane);

  // Found by the config fuzzer: the default levels (no key to point at) is named at its object.
  doc = SmallCluster();
  doc["servers"] = 512;
  CHECK_THAT(ErrorAt(doc, "/inter_server"),
             Catch::Contains("a 2-level fat tree of radix-64 switches connects at most 2048"));

  doc = SmallCluster();
  doc["servers"] = 131072;
  CHECK_THAT(ErrorAt(doc, "/servers"), Catch::Contains("devices; shardlab simulates up to 131072"));

  doc = SmallCluster();
  doc["device"]["memroy"] = "1 GB";
  CHECK_THAT(ErrorAt(doc, "/device/memroy"), Catch::Contains("did you mean 'memory'"));

  doc = SmallCluster();
  doc.erase("host");
  CHECK_THAT(ErrorAt(doc, ""), Catch::Contains(R"(missing required key "host")"));
}

TEST_CASE("fat-tree capacity follows the k, k^2/2, k^3/4 rule") {
  CHECK(FatTreeCapacity(1, 64) == 64);
  CHECK(FatTreeCapacity(2, 64) == 2048);
  CHECK(FatTreeCapacity(3, 40) == 16000);
}

}  // namespace
}  // namespace shardlab

namespace shardlab {
namespace {

TEST_CASE("kernel figures of a device are checked and round-trip") {
  auto doc = SmallCluster();
  doc["device"]["compute_units"] = 132;
  CHECK_THAT(ErrorAt(doc, "/device/compute_units"), Catch::Contains("needs gemm_tiles"));
  doc["device"]["gemm_tiles"] = nlohmann::json::parse("[[128, 256]]");
  CHECK_THAT(ErrorAt(doc, "/device/gemm_tiles/0"), Catch::Contains("[rows, cols, relative efficiency]"));
  doc["device"]["gemm_tiles"] = nlohmann::json::parse("[[128, 256, 1.0], [64, 64, 0.6]]");
  doc["device"]["gemm_efficiency"] = {{"float9", 0.5}};
  CHECK_THAT(ErrorAt(doc, "/device/gemm_efficiency/float9"), Catch::Contains("is not a dtype"));
  doc["device"]["gemm_efficiency"] = {{"float8_e4m3fn", 0.64}};
  doc["device"]["misaligned_gemm_efficiency"] = 0.4;
  CHECK_THAT(ErrorAt(doc, "/device/misaligned_gemm_efficiency"), Catch::Contains("needs gemm_alignment"));
  doc["device"]["gemm_alignment"] = 16;
  doc["device"]["attention"] = {{"half_length", 768}};
  CHECK_THAT(ErrorAt(doc, "/device/attention"), Catch::Contains("efficiency"));
  doc["device"]["attention"] = {{"efficiency", 0.84}, {"half_length", 768}};
  doc["device"]["memory_efficiency"] = 0.6;
  doc["device"]["gemm_memory_efficiency"] = 0.65;
  CHECK_THAT(ErrorAt(doc, "/device/gemm_memory_efficiency"), Catch::Contains("exceeds memory_efficiency 0.6"));
  doc["device"]["memory_efficiency"] = 0.89;
  const ClusterSpec c = ReadClusterSpec(JsonNode(doc, "cluster.json"));
  CHECK(c.device.gemm_memory_efficiency == Approx(0.65));
  CHECK(c.device.gemm_tiles.size() == 2);
  CHECK(c.device.attention.backward_efficiency == Approx(0.84));  // defaults to the forward's
  CHECK(c.device.gemm_efficiency.at(DType::kFloat8E4M3) == Approx(0.64));
  const nlohmann::json round = ToJson(c);
  CHECK(ReadClusterSpec(JsonNode(round, "round.json")) == c);
  doc["device"].erase("compute_units");
  doc["device"].erase("gemm_tiles");
  CHECK_THAT(ErrorAt(doc, "/device/gemm_memory_efficiency"), Catch::Contains("needs compute_units"));
  doc["device"].erase("gemm_memory_efficiency");
  doc["device"]["gemm_tiles"] = nlohmann::json::parse("[[128, 256, 1.0]]");
  CHECK_THAT(ErrorAt(doc, "/device/gemm_tiles"), Catch::Contains("needs compute_units"));
}

}  // namespace
}  // namespace shardlab
