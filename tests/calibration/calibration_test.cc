// Calibration: the robust fit, fitting measurement files, applying a
// calibration to a cluster and the errors of bad files.
#include <cmath>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/calibration/fit_calibration.h"
#include "core/calibration/robust_fit.h"
#include "core/config/run_config.h"
#include "core/cost/collective_cost.h"
#include "core/cost/compute_cost.h"
#include "core/util/json_reader.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

using testing::Doc;
using testing::ExpectConfigError;
using testing::SourcePath;

TEST_CASE("robust fit recovers a line and ignores an outlier") {
  Eigen::MatrixXd x(8, 2);
  Eigen::VectorXd y(8);
  for (int i = 0; i < 8; ++i) {
    const double bytes = std::pow(4.0, i) * 1024;
    x.row(i) << 1, bytes;
    y(i) = 20e-6 + bytes / 5e9;
  }
  RobustFit exact = FitRobust(x, y);
  CHECK(exact.coefficients(0) == Approx(20e-6).epsilon(1e-6));
  CHECK(exact.coefficients(1) == Approx(1 / 5e9).epsilon(1e-6));
  CHECK(exact.max_relative < 1e-9);
  y(3) *= 8;  // a sample hit by a scheduler hiccup
  RobustFit robust = FitRobust(x, y);
  CHECK(robust.coefficients(0) == Approx(20e-6).epsilon(0.05));
  CHECK(robust.coefficients(1) == Approx(1 / 5e9).epsilon(0.02));
  CHECK(robust.outliers >= 1);
  CHECK(std::abs(robust.relative_residuals[3]) > 0.5);
}

TEST_CASE("robust fit keeps coefficients non-negative") {
  Eigen::MatrixXd x(4, 2);
  Eigen::VectorXd y(4);
  for (int i = 0; i < 4; ++i) {
    x.row(i) << 1, (i + 1) * 1000.0;
    y(i) = (i + 1) * 1e-3;  // a line through the origin, noise would make the intercept negative
  }
  y(0) *= 0.9;
  const RobustFit f = FitRobust(x, y);
  CHECK(f.coefficients(0) >= 0);
  CHECK(f.coefficients(1) > 0);
}

// Ring collectives measured on a link of 2 GB/s and 30 us per step, 4 ranks.
nlohmann::json SyntheticCollectives() {
  nlohmann::json samples = nlohmann::json::array();
  const double bandwidth = 2e9, step = 30e-6, n = 4;
  for (const char* op : {"allreduce", "allgather", "reducescatter"})
    for (double size = 4096; size <= 64 << 20; size *= 4) {
      const std::string o = op;
      const double sim_bytes = o == "allgather" ? size / n : size;
      const Collective c = ParseCollective(o);
      GroupPlacement p;
      p.size = 4;
      ClusterSpec cluster;
      cluster.devices_per_server = 4;
      cluster.intra_server.link_bandwidth = bandwidth;
      cluster.intra_server.latency = step;
      samples.push_back({{"op", o},
                         {"algorithm", "ring"},
                         {"scope", "intra_server"},
                         {"ranks", 4},
                         {"size", size},
                         {"seconds", CollectiveSeconds(c, CollectiveAlgorithm::kRing, sim_bytes, p, cluster)}});
    }
  return {{"format", "shardlab-measurements"},
          {"version", 1},
          {"kind", "collectives"},
          {"backend", "gloo"},
          {"runtime", "cpu"},
          {"device", "test"},
          {"ranks", 4},
          {"samples", samples}};
}

nlohmann::json SyntheticGemms() {
  nlohmann::json samples = nlohmann::json::array();
  const double peak = 50e9, half = 64, depth = 160, overhead = 10e-6;
  for (int s = 32; s <= 1024; s *= 2)
    for (int m : {s, 4 * s}) {
      const double flops = 2.0 * m * s * s;
      samples.push_back({{"m", m},
                         {"n", s},
                         {"k", s},
                         {"seconds", overhead + flops / peak * (1 + half * (1.0 / m + 1.0 / s) + depth / s)}});
    }
  nlohmann::json copies = nlohmann::json::array();
  for (double b = 1 << 20; b <= 256 << 20; b *= 4) copies.push_back({{"bytes", b}, {"seconds", 5e-6 + b / 8e9}});
  return {{"format", "shardlab-measurements"},
          {"version", 1},
          {"kind", "gemm"},
          {"backend", "gloo"},
          {"runtime", "cpu"},
          {"device", "test"},
          {"ranks", 4},
          {"dtype", "float32"},
          {"samples", samples},
          {"copies", copies}};
}

TEST_CASE("calibration recovers links and the GEMM model from measurements") {
  const nlohmann::json coll = SyntheticCollectives(), gemm = SyntheticGemms();
  const Calibration c = FitCalibration({JsonNode(coll, "coll.json"), JsonNode(gemm, "gemm.json")});
  REQUIRE(c.collectives.size() == 3);
  for (const CollectiveFit& f : c.collectives) {
    INFO(ToString(f.op));
    CHECK(f.link.bandwidth == Approx(2e9).epsilon(1e-4));
    CHECK(f.link.latency == Approx(30e-6).epsilon(1e-3));
    CHECK(f.quality.rms_relative_residual < 1e-6);
  }
  REQUIRE(c.gemm);
  CHECK(c.gemm->peak_flops == Approx(50e9).epsilon(1e-4));
  CHECK(c.gemm->half_size == Approx(64).epsilon(1e-3));
  CHECK(c.gemm->half_depth == Approx(160).epsilon(1e-3));
  CHECK(c.gemm->overhead == Approx(10e-6).epsilon(1e-3));
  REQUIRE(c.copy);
  CHECK(c.copy->bandwidth == Approx(8e9).epsilon(1e-4));

  // The file round-trips, and a cluster takes it: the closed forms reproduce the measurements.
  const nlohmann::json file = ToJson(c);
  const Calibration back = ReadCalibration(JsonNode(file, "cal.json"));
  CHECK(back.collectives.size() == 3);
  ClusterSpec cluster = LoadRunFile(SourcePath("configs/runs/bert-large-a100-8.json")).cluster;
  cluster.device.compute_units = 0;  // no tile waves: the synthetic GEMMs have none
  // A thin GEMM's streaming rate keeps its absolute figure under the measured copy rate.
  cluster.device.gemm_memory_efficiency = 0.002;
  const double streaming = cluster.device.gemm_memory_efficiency * cluster.device.memory_bandwidth;
  ApplyCalibration(back, "cal.json", &cluster);
  CHECK(cluster.calibration_file == "cal.json");
  CHECK(cluster.device.memory_bandwidth == Approx(8e9).epsilon(1e-4));
  CHECK(cluster.device.gemm_memory_efficiency * cluster.device.memory_bandwidth == Approx(streaming));
  CHECK(cluster.intra_server.link_bandwidth == Approx(2e9).epsilon(1e-4));
  GroupPlacement p = PlaceStridedGroup(0, 4, 1, cluster);
  const double predicted = CollectiveSeconds(Collective::kAllGather, CollectiveAlgorithm::kRing, 1 << 20, p, cluster);
  CHECK(predicted == Approx(3 * (1 << 20) / 2e9 + 3 * 30e-6).epsilon(1e-3));
  CHECK(PeakFlops(cluster.device, DType::kFloat32) == Approx(50e9).epsilon(1e-4));
  const double t =
      ComputeSeconds(2.0 * 128 * 64 * 64, 0, DType::kFloat32, cluster, false, KernelShape{{128, 64, 64}, {}, false})
          .seconds;
  CHECK(t ==
        Approx(10e-6 + 2.0 * 128 * 64 * 64 / 50e9 * (1 + 64.0 * (1.0 / 128 + 1.0 / 64) + 160.0 / 64)).epsilon(1e-3));
}

// AllReduce over one Atlas 800T A2 server's 8 NPUs, timed by `a`'s closed
// form with HCCS links of 20 GB/s and 5 us, labelled `algorithm`.
nlohmann::json MeshAllReduces(const ClusterSpec& a2, CollectiveAlgorithm a, const std::string& algorithm) {
  ClusterSpec truth = a2;
  truth.intra_server.link_bandwidth = 20e9;
  truth.intra_server.latency = 5e-6;
  const GroupPlacement p = PlaceStridedGroup(0, 8, 1, truth);
  nlohmann::json samples = nlohmann::json::array();
  for (double size = 1 << 20; size <= 1 << 30; size *= 4)
    samples.push_back({{"op", "allreduce"},
                       {"algorithm", algorithm},
                       {"scope", "intra_server"},
                       {"ranks", 8},
                       {"size", size},
                       {"seconds", CollectiveSeconds(Collective::kAllReduce, a, size, p, truth)}});
  return {{"format", "shardlab-measurements"},
          {"version", 1},
          {"kind", "collectives"},
          {"backend", "hccl"},
          {"runtime", "npu"},
          {"device", "Ascend 910B"},
          {"ranks", 8},
          {"samples", samples}};
}

TEST_CASE("an HCCL measurement inside an HCCS mesh calibrates one link of the mesh") {
  const std::string path = SourcePath("configs/clusters/atlas800t-a2-910b.json");
  const ClusterSpec a2 = ReadClusterSpec(JsonNode(ReadJsonFile(path), path));
  REQUIRE(a2.intra_server.kind == IntraServerFabric::Kind::kHccsMesh);
  const GroupPlacement p = PlaceStridedGroup(0, 8, 1, a2);
  REQUIRE(ChooseAlgorithm(Collective::kAllReduce, 1 << 30, p, a2) == CollectiveAlgorithm::kFullMesh);
  // HCCL's own choice there is the full mesh, named or not; a ring measured
  // over the same links gives the same link.
  for (const auto& [a, label] :
       {std::pair{CollectiveAlgorithm::kFullMesh, "auto"}, std::pair{CollectiveAlgorithm::kFullMesh, "full_mesh"},
        std::pair{CollectiveAlgorithm::kRing, "ring"}}) {
    INFO(label);
    const nlohmann::json measured = MeshAllReduces(a2, a, label);
    const Calibration c = FitCalibration({JsonNode(measured, "hccl.json")});
    ClusterSpec cluster = a2;
    ApplyCalibration(c, "hccl.json", &cluster);
    CHECK(cluster.intra_server.link_bandwidth == Approx(20e9).epsilon(1e-3));
    CHECK(cluster.intra_server.latency == Approx(5e-6).epsilon(1e-2));
    for (const auto& s : measured["samples"])
      CHECK(CollectiveSeconds(Collective::kAllReduce, a, s["size"].get<double>(), p, cluster) ==
            Approx(s["seconds"].get<double>()).epsilon(1e-3));
  }
}

TEST_CASE("on two HCCS meshes per server, a fit inside one mesh sets its links and one across them the path") {
  const std::string path = SourcePath("configs/clusters/ascend910-atlas900.json");
  const ClusterSpec a910 = ReadClusterSpec(JsonNode(ReadJsonFile(path), path));
  REQUIRE(a910.intra_server.group_size == 4);
  // HCCL's choice inside a mesh of 4 (the full mesh, 20 GB/s links), and a
  // ring over the server's 8 NPUs limited by a 10 GB/s path between meshes.
  ClusterSpec truth = a910;
  truth.intra_server.link_bandwidth = 20e9;
  truth.intra_server.cross_group_bandwidth = 10e9;
  truth.intra_server.latency = 5e-6;
  nlohmann::json samples = nlohmann::json::array();
  for (int ranks : {4, 8}) {
    const GroupPlacement p = PlaceStridedGroup(0, ranks, 1, truth);
    const CollectiveAlgorithm a = ranks == 4 ? CollectiveAlgorithm::kFullMesh : CollectiveAlgorithm::kRing;
    for (double size = 1 << 20; size <= 1 << 30; size *= 4)
      samples.push_back({{"op", "allreduce"},
                         {"algorithm", "auto"},
                         {"scope", "intra_server"},
                         {"ranks", ranks},
                         {"size", size},
                         {"seconds", CollectiveSeconds(Collective::kAllReduce, a, size, p, truth)}});
  }
  const nlohmann::json measured = {{"format", "shardlab-measurements"},
                                   {"version", 1},
                                   {"kind", "collectives"},
                                   {"backend", "hccl"},
                                   {"runtime", "npu"},
                                   {"device", "Ascend 910"},
                                   {"ranks", 8},
                                   {"samples", samples}};
  ClusterSpec cluster = a910;
  ApplyCalibration(FitCalibration({JsonNode(measured, "hccl.json")}), "hccl.json", &cluster);
  CHECK(cluster.intra_server.link_bandwidth == Approx(20e9).epsilon(1e-3));
  CHECK(cluster.intra_server.cross_group_bandwidth == Approx(10e9).epsilon(1e-3));
  // The closed forms take the mesh's fit: a group of 4 as measured.
  const GroupPlacement four = PlaceStridedGroup(0, 4, 1, cluster);
  CHECK(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kFullMesh, 1 << 28, four, cluster) ==
        Approx(CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kFullMesh, 1 << 28,
                                 PlaceStridedGroup(0, 4, 1, truth), truth))
            .epsilon(1e-3));
}

TEST_CASE("calibration files with errors name the file and the place") {
  nlohmann::json coll = SyntheticCollectives();
  coll["format"] = "something-else";
  auto e = ExpectConfigError([&] { FitCalibration({JsonNode(coll, "coll.json")}); });
  CHECK(e.file() == "coll.json");
  CHECK(e.pointer() == "/format");
  coll = SyntheticCollectives();
  coll["samples"][2]["seconds"] = -1;
  e = ExpectConfigError([&] { FitCalibration({JsonNode(coll, "coll.json")}); });
  CHECK(e.pointer() == "/samples/2/seconds");
  Doc bad(R"({"format": "shardlab-calibration", "version": 1, "gemm": {"dtype": "float33"}})", "cal.json");
  e = ExpectConfigError([&] { ReadCalibration(bad.root()); });
  CHECK(e.pointer() == "/gemm/dtype");
}

TEST_CASE("a cluster file names its calibration file") {
  const RunSpec run = LoadRunFile(SourcePath("configs/runs/tiny-gpt-cpu-dp4.json"));
  CHECK_THAT(run.cluster.calibration_file, Catch::EndsWith("configs/calibration/localhost-cpu.json"));
  CHECK(run.cluster.calibrated_links.count({Collective::kAllReduce, NetworkScope::kIntraServer}) == 1);
  CHECK(run.cluster.device.compute_efficiency == 1);
}

TEST_CASE("the H100 calibration measured on a lent GPU loads with a bfloat16 GEMM fit below the datasheet peak") {
  const Calibration c = LoadCalibrationFile(SourcePath("configs/calibration/h100-sxm5-1gpu.json"));
  REQUIRE(c.gemm);
  CHECK(c.gemm->dtype == "bfloat16");
  // Random operands (zero-filled ones measured 884 TFLOP/s); the H100 SXM5 datasheet says 989.
  CHECK(c.gemm->peak_flops > 600e12);
  CHECK(c.gemm->peak_flops < 989e12);
  REQUIRE(c.copy);
  CHECK(c.copy->bandwidth > 2e12);
}

}  // namespace
}  // namespace shardlab
