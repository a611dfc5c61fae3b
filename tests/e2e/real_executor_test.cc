// End to end, the real path on CPU ranks: benchmark collectives and GEMMs on
// 4 Gloo ranks over loopback, calibrate, simulate a small model on a
// localhost-cpu cluster built from that calibration, execute the same plan for
// real and check the error report and both traces are produced and
// well-formed. Timings are not asserted (they belong in the closing notes).
#include <cmath>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using shardlab::testing::CliResult;
using shardlab::testing::Run;
using shardlab::testing::ScratchDir;
using shardlab::testing::Slurp;

nlohmann::json ReadJson(const fs::path& p) { return nlohmann::json::parse(Slurp(p)); }

void WriteJson(const fs::path& p, const nlohmann::json& j) { std::ofstream(p) << j.dump(2); }

TEST_CASE("gloo loop: bench calibrate simulate and execute on 4 ranks") {
  const fs::path dir = ScratchDir() / "gloo-loop";
  fs::create_directories(dir);
  const std::string coll = (dir / "coll.json").string(), gemm = (dir / "gemm.json").string(),
                    cal = (dir / "cal.json").string();

  CliResult r = Run("bench collectives --backend gloo --ranks 4 --sizes 64KiB:4MiB --warmup 2 --repeats 5 -o " + coll);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("busbw(GB/s)"));
  CHECK(r.err.find("benchmarking") == std::string::npos);  // piped: no progress line
  const nlohmann::json measured = ReadJson(coll);
  CHECK(measured["format"] == "shardlab-measurements");
  CHECK(measured["samples"].size() == 5 * 7);

  r = Run("bench gemm --backend cpu --ranks 4 --warmup 1 --repeats 2 -o " + gemm);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("efficiency"));

  r = Run("calibrate " + coll + " " + gemm + " -o " + cal);
  REQUIRE(r.rc == 0);
  const nlohmann::json calibration = ReadJson(cal);
  CHECK(calibration["format"] == "shardlab-calibration");
  CHECK(calibration["collectives"].size() == 5);
  CHECK(calibration["gemm"]["peak_flops"].get<double>() > 0);
  CHECK(calibration["hardware"]["collectives"]["backend"] == "gloo");
  CHECK(!calibration["created"].get<std::string>().empty());

  // The localhost-cpu cluster with this calibration, and the small data-parallel run on it.
  nlohmann::json cluster = ReadJson(SHARDLAB_SOURCE_DIR "/configs/clusters/localhost-cpu.json");
  cluster["calibration"] = cal;
  WriteJson(dir / "cluster.json", cluster);
  nlohmann::json run = ReadJson(SHARDLAB_SOURCE_DIR "/configs/runs/tiny-gpt-cpu-dp4.json");
  run["cluster"] = (dir / "cluster.json").string();
  run["model"] = SHARDLAB_SOURCE_DIR "/configs/models/tiny-gpt.json";
  const std::string run_file = (dir / "run.json").string();
  WriteJson(run_file, run);

  r = Run("simulate " + run_file + " --engine analytical --json");
  REQUIRE(r.rc == 0);
  const nlohmann::json simulated = nlohmann::json::parse(r.out);
  CHECK(simulated["run"]["cluster"]["calibration"] == fs::absolute(cal).lexically_normal().string());
  CHECK(simulated["result"]["step_seconds"].get<double>() > 0);

  const std::string report_file = (dir / "report.json").string();
  r = Run("validate-run " + run_file + " --backend gloo --ranks 4 --warmup 1 --steps 1 -o " + report_file +
              " --trace-measured " + (dir / "measured.trace.json").string() + " --trace-simulated " +
              (dir / "simulated.trace.json").string(),
          "SHARDLAB_PROGRESS=always");
  REQUIRE(r.rc == 0);
  // Rank 0's steps reach the parent's progress line (forwarded from its child process), then SimGrid's.
  CHECK_THAT(r.err, Catch::Contains("executing 2 step(s) on 4 gloo ranks ["));
  CHECK_THAT(r.err, Catch::Contains("[########################] 100%"));
  CHECK_THAT(r.err, Catch::Contains("simulating on SimGrid ["));
  CHECK_THAT(r.out, Catch::Contains("step time   measured"));
  const nlohmann::json report = ReadJson(report_file);
  CHECK(report["ranks"] == 4);
  CHECK(report["measured"]["step_seconds"].get<double>() > 0);
  CHECK(std::isfinite(report["errors"]["step_analytical"].get<double>()));
  CHECK(std::isfinite(report["errors"]["step_simgrid"].get<double>()));
  bool gemm_row = false;
  for (const auto& t : report["errors"]["task_types"]) gemm_row |= t["type"] == "gemm" && t["measured"] > 0;
  CHECK(gemm_row);
  for (const char* trace : {"measured.trace.json", "simulated.trace.json"}) {
    INFO(trace);
    const nlohmann::json t = ReadJson(dir / trace);
    CHECK(t["traceEvents"].size() > 4);
  }
}

TEST_CASE("real back ends fail cleanly") {
  // Without a GPU: one line, exit 1 (with one, the NCCL benchmark runs).
  CliResult r = Run("bench collectives --backend nccl --sizes 1MiB --repeats 1 --warmup 0");
  if (r.rc != 0) {
    CHECK(r.rc == 1);
    CHECK_THAT(r.err, Catch::StartsWith("shardlab: error: "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  r = Run("validate-run " SHARDLAB_SOURCE_DIR "/configs/runs/tiny-gpt-cpu-dp4.json --ranks 3");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("has 4 devices"));
  r = Run("calibrate " SHARDLAB_SOURCE_DIR "/configs/runs/tiny-gpt-cpu-dp4.json -o " +
          (ScratchDir() / "never.json").string());
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("tiny-gpt-cpu-dp4.json: /: no \"format\" key"));
  CHECK_THAT(r.err, Catch::Contains("shardlab-measurements"));
  CHECK(!fs::exists(ScratchDir() / "never.json"));
}

}  // namespace
