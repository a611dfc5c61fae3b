// End-to-end runs of the `shardlab` binary: exit codes, one-line errors,
// output files, and every shipped run.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path ScratchDir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("shardlab-e2e-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Runs shardlab from the repository root with `args` (already shell-quoted).
CliResult Run(const std::string& args) {
  const fs::path out = ScratchDir() / "stdout", err = ScratchDir() / "stderr";
  const std::string cmd = std::string("cd '") + SHARDLAB_SOURCE_DIR + "' && '" + SHARDLAB_BINARY + "' " + args +
                          " > '" + out.string() + "' 2> '" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

int Lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST_CASE("version and help work for every command") {
  CliResult r = Run("--version");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::StartsWith("shardlab 0.1.0 (SimGrid 3."));
  for (const char* command : {"", "simulate", "graph", "models"}) {
    INFO(command);
    r = Run(std::string(command) + " --help");
    CHECK(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("Usage:"));
  }
}

TEST_CASE("usage errors exit 2") {
  CHECK(Run("").rc == 2);
  CHECK(Run("simulate").rc == 2);
  CHECK(Run("frobnicate").rc == 2);
  CHECK(Run("graph configs/models/gpt3-175b.json --pipeline-stages 0").rc == 2);
  CHECK(Run("--log-level loud models").rc == 2);
}

TEST_CASE("every shipped run simulates and prints its summary") {
  for (const auto& entry : fs::directory_iterator(fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs")) {
    const std::string name = entry.path().stem().string();
    INFO(name);
    const CliResult r = Run("simulate configs/runs/" + name + ".json");
    CHECK(r.rc == 0);
    CHECK(r.err.empty());
    CHECK_THAT(r.out, Catch::StartsWith("run " + name));
    CHECK_THAT(r.out, Catch::Contains("parameters"));
  }
}

TEST_CASE("simulate writes a result JSON that names the run") {
  const fs::path result = ScratchDir() / "result.json";
  const CliResult r = Run("simulate configs/runs/resnet50-ascend-8.json --out '" + result.string() + "'");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(Slurp(result));
  CHECK(j["run"]["name"] == "resnet50-ascend-8");
  CHECK(j["summary"]["model"]["parameters"] == 25557032);
  CHECK(j["summary"]["devices"] == 8);
  const CliResult json = Run("simulate configs/runs/resnet50-ascend-8.json --json");
  CHECK(nlohmann::json::parse(json.out) == j);
}

TEST_CASE("user errors exit 1 with one line naming file and JSON path") {
  const fs::path bad = ScratchDir() / "bad-run.json";
  std::ofstream(bad) << R"({"name": "bad", "cluster": ")" << SHARDLAB_SOURCE_DIR
                     << R"(/configs/clusters/ascend910-atlas900.json", "model": ")" << SHARDLAB_SOURCE_DIR
                     << R"(/configs/models/resnet50.json", "parallel": {"parallel_mode": "data_parallel",
                        "all_reduce_fusion_config": [5, 2], "global_batch_size": 4096}})";
  CliResult r = Run("simulate '" + bad.string() + "'");
  CHECK(r.rc == 1);
  CHECK(Lines(r.err) == 1);
  CHECK_THAT(r.err, Catch::Contains(bad.string() + ": /parallel/all_reduce_fusion_config/1: split indices must be "
                                                   "strictly increasing"));
  CHECK(r.out.empty());

  r = Run("simulate configs/runs/missing.json");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("configs/runs/missing.json: /: cannot open the file"));

  std::ofstream(bad) << "{ not json";
  r = Run("simulate '" + bad.string() + "'");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("invalid JSON"));
  CHECK(Lines(r.err) == 1);
}

TEST_CASE("a failed output write leaves no file") {
  const CliResult r = Run("simulate configs/runs/resnet50-ascend-8.json --out /nonexistent-dir/result.json");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot write /nonexistent-dir/result.json"));
  CHECK_FALSE(fs::exists("/nonexistent-dir"));
}

TEST_CASE("graph prints a summary and saves a graph that loads back") {
  const fs::path saved = ScratchDir() / "ffn-graph.json";
  CliResult r = Run("graph configs/models/seed-ffn.json --save '" + saved.string() + "'");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("MatMul"));
  CHECK_THAT(r.out, Catch::Contains("2 operators carry a shard strategy"));
  const CliResult again = Run("graph '" + saved.string() + "' --json");
  REQUIRE(again.rc == 0);
  const auto summary = nlohmann::json::parse(again.out);
  CHECK(summary["parameters"] == 784 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10);
  CHECK(summary["strategies"] == 2);
  r = Run("graph configs/models/gpt3-175b.json --pipeline-stages 4");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("stage 3"));
}

TEST_CASE("models lists every builder") {
  const CliResult r = Run("models");
  CHECK(r.rc == 0);
  for (const char* name : {"gpt:", "bert:", "resnet50:", "wide_deep:", "ffn:"}) CHECK_THAT(r.out, Catch::Contains(name));
}

}  // namespace
