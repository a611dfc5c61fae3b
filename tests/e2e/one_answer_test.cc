// One run file, one answer: every command that chooses strategies and
// simulates a step (simulate, search, sweep, tune-fusion's baseline,
// validate) reports the same strategies and the same step, bit for bit, for
// every shipped run and for runs in the other parallel modes. Strategy
// checkpoints saved by one run reproduce its step when loaded by another.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using shardlab::testing::CliResult;
using shardlab::testing::Run;
using shardlab::testing::ScratchDir;
using shardlab::testing::Slurp;

const fs::path kRuns = fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs";

std::string Quote(const fs::path& p) { return "'" + p.string() + "'"; }

// A run document whose cluster and model paths hold from any folder.
json AbsoluteRun(const fs::path& file) {
  json doc = json::parse(Slurp(file));
  for (const char* key : {"cluster", "model"})
    if (doc.at(key).is_string()) doc[key] = (file.parent_path() / doc[key].get<std::string>()).lexically_normal().string();
  return doc;
}

fs::path Write(const fs::path& path, const json& doc) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << doc.dump(2) << "\n";
  return path;
}

// A shipped run in another parallel mode, written to the scratch folder.
fs::path Variant(const std::string& base, const std::string& name, const json& parallel) {
  json doc = AbsoluteRun(kRuns / (base + ".json"));
  doc["name"] = name;
  for (const auto& [key, value] : parallel.items()) doc["parallel"][key] = value;
  return Write(ScratchDir() / "one-answer" / (name + ".json"), doc);
}

std::vector<fs::path> Cases() {
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(kRuns)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  // sharding_propagation needs configured strategies to start from: BERT has none.
  for (const char* mode : {"dynamic_programming", "recursive_programming"})
    cases.push_back(Variant("bert-large-a100-8", std::string("bert-auto-") + mode,
                            {{"parallel_mode", "auto_parallel"}, {"search_mode", mode}}));
  for (const char* mode : {"dynamic_programming", "recursive_programming", "sharding_propagation"})
    cases.push_back(Variant("tiny-gpt-cpu-mp2-pp2", std::string("tiny-gpt-auto-") + mode,
                            {{"parallel_mode", "auto_parallel"}, {"search_mode", mode}}));
  cases.push_back(Variant("bert-large-a100-8", "bert-auto-time",
                          {{"parallel_mode", "auto_parallel"}, {"cost_model", {{"model", "time"}}}}));
  cases.push_back(Variant("seed-ffn-ascend-8", "seed-ffn-hybrid", {{"parallel_mode", "hybrid_parallel"}}));
  cases.push_back(Variant("seed-ffn-ascend-8", "seed-ffn-semi", {{"parallel_mode", "semi_auto_parallel"}}));
  return cases;
}

json JsonOf(const CliResult& r, const std::string& what) {
  INFO(what << " exited " << r.rc << ": " << r.err);
  REQUIRE(r.rc == 0);
  return json::parse(r.out);
}

struct Answer {
  double step = 0;
  json strategies;
};

Answer Simulated(const fs::path& run) {
  const json j = JsonOf(Run("simulate " + Quote(run) + " --engine analytical --json"), "simulate");
  return {j.at("result").at("step_seconds").get<double>(), j.at("strategies")};
}

TEST_CASE("every command reports the same strategies and step for a run", "[slow]") {
  const std::vector<fs::path> cases = Cases();
  std::vector<Answer> answers;
  json validation = json::array();
  int tuned = 0;
  for (const fs::path& run : cases) {
    const std::string name = run.stem().string();
    INFO(name);
    const Answer a = Simulated(run);
    answers.push_back(a);
    CHECK(a.step > 0);

    const json search = JsonOf(Run("search " + Quote(run) + " --json"), "search");
    CHECK(search.at("step_seconds").get<double>() == a.step);
    REQUIRE(search.at("operators").size() == a.strategies.size());
    for (size_t i = 0; i < a.strategies.size(); ++i) CHECK(search["operators"][i]["strategy"] == a.strategies[i]);

    const fs::path sweep = Write(ScratchDir() / "one-answer" / (name + ".sweep.json"),
                                 {{"run", fs::absolute(run).string()}, {"grid", {{"name", {name}}}}, {"engine", "analytical"}});
    const fs::path rows = ScratchDir() / "one-answer" / (name + ".rows.json");
    CliResult r = Run("sweep " + Quote(sweep) + " --jobs 1 --out " + Quote(rows));
    REQUIRE(r.rc == 0);
    const json row = json::parse(Slurp(rows)).at(0);
    INFO(row.dump());
    CHECK(row.at("step_seconds").get<double>() == a.step);

    r = Run("tune-fusion " + Quote(run) + " --engine analytical --verify 0 --jobs 1 --json");
    if (r.rc == 0) {
      ++tuned;
      // The run's own setting, whichever kind of candidate listed it.
      const json candidates = json::parse(r.out).at("candidates");
      const json* own = nullptr;
      for (const json& c : candidates)
        if (c.at("current").get<bool>()) own = &c;
      REQUIRE(own);
      CHECK(own->at("verified").at("step_seconds").get<double>() == a.step);
    }

    json doc = AbsoluteRun(run);
    validation.push_back({{"name", name},
                          {"source", "one answer"},
                          {"published", {{"metric", "tflops_per_device_with_recompute"}, {"value", 1.0}}},
                          {"run", doc}});
  }
  CHECK(tuned >= 8);  // runs without gradients to fuse (or with fusion off) cannot be tuned

  const fs::path folder = ScratchDir() / "one-answer-validation";
  fs::remove_all(folder);
  for (size_t i = 0; i < validation.size(); ++i)
    Write(folder / (std::to_string(1000 + i) + ".json"), validation[i]);
  const json report = JsonOf(Run("validate " + Quote(folder) + " --json"), "validate");
  REQUIRE(report.at("cases").size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].stem().string());
    CHECK(report["cases"][i].at("step_seconds").get<double>() == answers[i].step);
  }
}

TEST_CASE("simulate of an auto_parallel run reports the searched strategies' step") {
  const fs::path run = Variant("bert-large-a100-8", "bert-auto-rec",
                               {{"parallel_mode", "auto_parallel"}, {"search_mode", "recursive_programming"}});
  const CliResult text = Run("simulate " + Quote(run) + " --engine analytical");
  REQUIRE(text.rc == 0);
  CHECK_THAT(text.out, Catch::Contains("strategies searched by recursive_programming (mindspore cost model)"));
  // The searched step, not the data-parallel default's.
  const Answer searched = Simulated(run);
  const json search = JsonOf(Run("search " + Quote(run) + " --json"), "search");
  CHECK(search.at("mode") == "recursive_programming");
  CHECK(search.at("step_seconds").get<double>() == searched.step);
}

TEST_CASE("a saved strategy checkpoint loaded back reproduces the step and a missing one is an error") {
  for (const char* extension : {".json", ".ckpt"}) {
    INFO(extension);
    const fs::path ckpt = ScratchDir() / "one-answer" / (std::string("saved") + extension);
    fs::remove(ckpt);
    const fs::path saver =
        Variant("tiny-gpt-cpu-mp2-pp2", "tiny-gpt-save",
                {{"parallel_mode", "auto_parallel"}, {"search_mode", "sharding_propagation"},
                 {"strategy_ckpt_save_file", ckpt.string()}});
    const Answer saved = Simulated(saver);
    REQUIRE(fs::exists(ckpt));
    // Loaded into a run that would otherwise search differently (dynamic programming, time model).
    const fs::path loader = Variant("tiny-gpt-cpu-mp2-pp2", "tiny-gpt-load",
                                    {{"parallel_mode", "auto_parallel"}, {"search_mode", "dynamic_programming"},
                                     {"strategy_ckpt_load_file", ckpt.string()}});
    const Answer loaded = Simulated(loader);
    CHECK(loaded.step == saved.step);
    CHECK(loaded.strategies == saved.strategies);
  }
  const fs::path missing = ScratchDir() / "one-answer" / "no-such-checkpoint.json";
  const fs::path run = Variant("tiny-gpt-cpu-mp2-pp2", "tiny-gpt-missing",
                               {{"parallel_mode", "semi_auto_parallel"}, {"strategy_ckpt_load_file", missing.string()}});
  const CliResult r = Run("simulate " + Quote(run) + " --engine analytical");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains(missing.string()) && Catch::Contains("cannot open"));
}

TEST_CASE("data_parallel and hybrid_parallel ignore shard strategies with one warning") {
  for (const char* mode : {"data_parallel", "hybrid_parallel"}) {
    INFO(mode);
    const fs::path run = Variant("seed-ffn-ascend-8", std::string("seed-ffn-") + mode, {{"parallel_mode", mode}});
    const CliResult r = Run("simulate " + Quote(run) + " --engine analytical --json");
    REQUIRE(r.rc == 0);
    CHECK_THAT(r.err, Catch::Contains(std::string("parallel_mode ") + mode + " ignores the shard strategies of 2 "
                                                                           "operators"));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    // Every operator runs the data-parallel default, unlike the seed's semi-auto strategies.
    const json j = json::parse(r.out);
    CHECK(j.at("strategy_choice").at("mode") == mode);
    CHECK(j.at("strategy_choice").at("objective").get<double>() > 0);  // evaluated, though not searched
    const fs::path semi = Variant("seed-ffn-ascend-8", "seed-ffn-semi-warn", {{"parallel_mode", "semi_auto_parallel"}});
    const CliResult s = Run("simulate " + Quote(semi) + " --engine analytical --json");
    REQUIRE(s.rc == 0);
    CHECK(s.err.empty());
    CHECK(j.at("strategies") != json::parse(s.out).at("strategies"));
  }
}

}  // namespace
