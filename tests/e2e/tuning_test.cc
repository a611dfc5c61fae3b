// End-to-end runs of `shardlab tune-fusion` and `shardlab sweep`: the tuned
// run file loads and simulates to the reported time, only the tuned keys
// change, bad requests fail with one line, and the MPI path (mpirun with
// several ranks on this machine) gives the same answer as one process.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using shardlab::testing::CliResult;
using shardlab::testing::OnPath;
using shardlab::testing::Run;
using shardlab::testing::ScratchDir;
using shardlab::testing::Slurp;

// mpirun on this machine: as root too, more ranks than cores, shared memory only.
const std::string kMpirun =
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none "
    "mpirun --oversubscribe -np 3";

nlohmann::json Json(const std::string& text) { return nlohmann::json::parse(text); }

nlohmann::json WithoutFusionKeys(nlohmann::json run) {
  run["parallel"].erase("all_reduce_fusion_config");
  run["parallel"].erase("comm_fusion");
  run.erase("cluster");
  run.erase("model");
  return run;
}

TEST_CASE("tune-fusion writes a run that differs only in the tuned keys and simulates to the reported time") {
  const fs::path out = ScratchDir() / "tuned" / "bert-tuned.json";
  fs::create_directories(out.parent_path());
  const fs::path plot = ScratchDir() / "bert.svg";
  CliResult r =
      Run("tune-fusion configs/runs/bert-large-ascend-512.json --engine analytical --max-buckets 12 --json "
          "--out '" +
          out.string() + "' --plot '" + plot.string() + "'");
  REQUIRE(r.rc == 0);
  const nlohmann::json report = Json(r.out);
  const double reported = report.at("winner_step_seconds").get<double>();
  CHECK(reported < report.at("default_step_seconds").get<double>());
  CHECK(report.at("mode") == "index");
  // The tuned file: the same run apart from the fusion keys (and paths rebased to its folder).
  const nlohmann::json input = Json(Slurp(fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs/bert-large-ascend-512.json"));
  const nlohmann::json tuned = Json(Slurp(out));
  CHECK(WithoutFusionKeys(tuned) == WithoutFusionKeys(input));
  CHECK(fs::exists(out.parent_path() / tuned.at("cluster").get<std::string>()));
  r = Run("simulate '" + out.string() + "' --engine analytical --json");
  REQUIRE(r.rc == 0);
  CHECK(Json(r.out).at("result").at("step_seconds").get<double>() == Approx(reported).epsilon(1e-9));
  CHECK(Slurp(plot).rfind("<svg", 0) == 0);
}

TEST_CASE("tune-fusion verifies with SimGrid in child processes and prints the winner") {
  CliResult r = Run("tune-fusion configs/runs/bert-large-a100-8.json --verify 3 --jobs 2", "SHARDLAB_PROGRESS=always");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("simgrid") && Catch::Contains("winner:") &&
                        Catch::Contains("one bucket (default)") && Catch::Contains("bucket stream"));
  CHECK_THAT(r.err, Catch::Contains("verifying with simgrid [########################] ") && Catch::Contains("best "));
}

TEST_CASE("tune-fusion rejects what MindSpore would ignore, with one line") {
  // The parallel optimizer makes MindSpore ignore split indices.
  CliResult r = Run("tune-fusion configs/runs/gpt3-175b-ascend-4096.json --mode index");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("ignores all_reduce_fusion_config"));
  r = Run("tune-fusion configs/runs/bert-large-a100-8.json --op reducescatter");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("enable_parallel_optimizer"));
  r = Run("tune-fusion configs/runs/bert-large-a100-8.json --op allgather --mode index");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("AllReduce only"));
}

TEST_CASE("tune-fusion under mpirun shares the candidates and agrees with one process") {
  if (!OnPath("mpirun")) {
    WARN("mpirun not found: the MPI path is not exercised");
    return;
  }
  const std::string args = "tune-fusion configs/runs/bert-large-a100-8.json --engine analytical --json --jobs 1";
  const CliResult single = Run(args);
  const CliResult mpi = Run(args, kMpirun);
  REQUIRE(single.rc == 0);
  INFO(mpi.err);
  REQUIRE(mpi.rc == 0);
  const nlohmann::json a = Json(single.out), b = Json(mpi.out);  // only the root prints
  CHECK(a.at("winner") == b.at("winner"));
  CHECK(a.at("winner_step_seconds") == b.at("winner_step_seconds"));
  size_t verified = 0;
  for (const auto& c : b.at("candidates")) verified += c.contains("verified");
  CHECK(verified >= 4);  // the defaults at least
}

TEST_CASE("sweep runs a grid and writes one row per point, failures as errors") {
  const fs::path csv = ScratchDir() / "pangu.csv";
  CliResult r = Run("sweep configs/sweeps/pangu-13b-pipeline.json --out '" + csv.string() + "'");
  REQUIRE(r.rc == 0);
  const std::string table = Slurp(csv);
  CHECK(std::count(table.begin(), table.end(), '\n') == 1 + 3 * 2 * 2);
  CHECK_THAT(table, Catch::StartsWith("parallel.micro_batch_interleaved,parallel.micro_batch_num,"
                                      "simulation.pipeline_schedule,step_seconds"));
  // One micro-batch for two stages is not a valid run: its rows say why.
  CHECK_THAT(table, Catch::Contains("micro_batch_num 1 must be at least pipeline_stages 2"));
  const fs::path json = ScratchDir() / "bert.json";
  r = Run("sweep configs/sweeps/bert-large-clusters.json --out '" + json.string() + "'",
          OnPath("mpirun") ? kMpirun : "");
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const nlohmann::json rows = Json(Slurp(json));
  REQUIRE(rows.size() == 3 * 2 * 3);
  for (const auto& row : rows) {
    CHECK_FALSE(row.contains("error"));
    CHECK(row.at("step_seconds").get<double>() > 0);
  }
}

TEST_CASE("a sweep file with a bad grid fails with its JSON path") {
  const fs::path bad = ScratchDir() / "bad-sweep.json";
  std::ofstream(bad)
      << R"({"run": ")" << SHARDLAB_SOURCE_DIR
      << R"(/configs/runs/seed-ffn-ascend-8.json", "grid": {"parallel.device_num": []}, "engine": "analytical"})";
  const CliResult r = Run("sweep '" + bad.string() + "'");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("/grid/parallel.device_num") && Catch::Contains("non-empty list"));
  // A grid key the run does not have is the sweep file's error, found before anything runs.
  std::ofstream(bad)
      << R"({"run": ")" << SHARDLAB_SOURCE_DIR
      << R"(/configs/runs/seed-ffn-ascend-8.json", "grid": {"parallel.global_bach_size": [8]}, "engine": "analytical"})";
  const CliResult typo = Run("sweep '" + bad.string() + "'");
  CHECK(typo.rc == 1);
  CHECK(typo.out.empty());
  CHECK_THAT(typo.err, Catch::Contains(bad.string() + ": /grid/parallel.global_bach_size: not a key of the run file") &&
                           Catch::Contains("did you mean 'global_batch_size'"));
}

}  // namespace

namespace {

TEST_CASE("search writes a strategy checkpoint that a run can load back") {
  const fs::path ckpt = ScratchDir() / "bert-dp.ckpt.json";
  CliResult r =
      Run("search configs/runs/bert-large-a100-8.json --mode dynamic_programming --json --out '" + ckpt.string() + "'");
  REQUIRE(r.rc == 0);
  const nlohmann::json searched = Json(r.out);
  const nlohmann::json checkpoint = Json(Slurp(ckpt));
  CHECK(checkpoint.at("operators").size() == searched.at("operators").size());
  CHECK(checkpoint.at("parameters").contains("embedding/word.table"));
  // The same run in semi_auto with the checkpoint loaded reproduces the searched strategies.
  nlohmann::json run = Json(Slurp(fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs/bert-large-a100-8.json"));
  run["cluster"] = std::string(SHARDLAB_SOURCE_DIR) + "/configs/clusters/dgx-a100-hdr.json";
  run["model"] = std::string(SHARDLAB_SOURCE_DIR) + "/configs/models/bert-large.json";
  run["parallel"]["parallel_mode"] = "semi_auto_parallel";
  run["parallel"]["strategy_ckpt_load_file"] = ckpt.string();
  const fs::path loaded = ScratchDir() / "bert-loaded.json";
  std::ofstream(loaded) << run.dump();
  r = Run("search '" + loaded.string() + "' --json");
  REQUIRE(r.rc == 0);
  const nlohmann::json again = Json(r.out);
  CHECK(again.at("mode") == "semi_auto");
  // Reshapes follow their input under semi_auto rules instead of the searched split.
  CHECK(again.at("step_seconds").get<double>() == Approx(searched.at("step_seconds").get<double>()).epsilon(0.01));
  for (size_t i = 0; i < again.at("operators").size(); ++i)
    if (again["operators"][i]["type"] != "Reshape" && again["operators"][i]["type"] != "Flatten")
      CHECK(again["operators"][i]["strategy"] == searched["operators"][i]["strategy"]);
}

TEST_CASE("sharding_propagation without a configured operator says what it needs") {
  const CliResult r = Run("search configs/runs/bert-large-a100-8.json --mode sharding_propagation");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("needs at least one operator with a configured `shard` strategy"));
}

TEST_CASE("sharding_propagation from GPT-3's weight MatMuls reproduces the hand-written Megatron layout") {
  // Only the weight MatMuls carry strategies (shard_scope weight_matmuls); propagation fills the rest.
  const CliResult propagated = Run("search bench/runs/gpt3-175b-propagation-4096.json --json");
  const CliResult written = Run("search configs/runs/gpt3-175b-ascend-4096.json --mode semi_auto --json");
  REQUIRE(propagated.rc == 0);
  REQUIRE(written.rc == 0);
  const nlohmann::json a = Json(propagated.out), b = Json(written.out);
  CHECK(a.at("configured_operators").get<size_t>() < b.at("configured_operators").get<size_t>());
  REQUIRE(a.at("operators").size() == b.at("operators").size());
  size_t differ = 0;
  for (size_t i = 0; i < a.at("operators").size(); ++i)
    differ += a["operators"][i]["strategy"] != b["operators"][i]["strategy"];
  CHECK(differ <= 1);  // the loss OneHot, whose strategy follows its output
}

TEST_CASE("compare runs the run's own strategies and every mode, each as search and simulate report it") {
  const std::string run = "configs/runs/bert-large-a100-8.json";
  const CliResult r = Run("compare " + run + " --engine analytical --json");
  REQUIRE(r.rc == 0);
  const nlohmann::json out = Json(r.out);
  size_t failed = 0, compared = 0;
  for (const auto& v : out.at("variants")) {
    const std::string mode = v.at("mode");
    INFO(v.dump());
    if (v.contains("error")) {
      ++failed;  // sharding_propagation: nothing configured in this run
      CHECK(mode == "sharding_propagation");
      continue;
    }
    const double step = v.at("analytical_step_seconds").get<double>();
    const nlohmann::json& choice = v.at("strategy_choice");
    if (mode == "run") {
      CHECK(choice.at("mode") == "data_parallel");
      const nlohmann::json simulated = Json(Run("simulate " + run + " --engine analytical --json").out);
      CHECK(step == simulated.at("result").at("step_seconds").get<double>());
    } else {
      CHECK(choice.at("mode") == mode);
      const CliResult s = Run("search " + run + " --mode " + mode + " --cost-model " +
                              choice.at("cost_model").get<std::string>() + " --json");
      REQUIRE(s.rc == 0);
      CHECK(step == Json(s.out).at("step_seconds").get<double>());
    }
    ++compared;
  }
  CHECK(failed == 2);
  CHECK(compared == 4);  // the run's own, dynamic_programming twice, recursive_programming
}

TEST_CASE("the cost model is configured under parallel.cost_model and checked") {
  nlohmann::json run = Json(Slurp(fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs/bert-large-a100-8.json"));
  run["cluster"] = std::string(SHARDLAB_SOURCE_DIR) + "/configs/clusters/dgx-a100-hdr.json";
  run["model"] = std::string(SHARDLAB_SOURCE_DIR) + "/configs/models/bert-large.json";
  run["parallel"]["parallel_mode"] = "auto_parallel";
  run["parallel"]["cost_model"] = {{"model", "time"}, {"gamma", 0.5}};
  const fs::path path = ScratchDir() / "bert-time.json";
  std::ofstream(path) << run.dump();
  CliResult r = Run("search '" + path.string() + "' --json");
  REQUIRE(r.rc == 0);
  CHECK(Json(r.out).at("cost_model") == "time");
  CHECK(Json(r.out).at("mode") == "dynamic_programming");
  run["parallel"]["cost_model"] = {{"model", "hours"}};
  std::ofstream(path) << run.dump();
  r = Run("search '" + path.string() + "'");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("/parallel/cost_model/model"));
}

}  // namespace
