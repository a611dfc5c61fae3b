// Golden results, SimGrid's .tesh files in spirit: every shipped run's
// analytical step (strategy choice, step time, throughput, MFU, per-stage
// passes, bubbles, communication and memory) is pinned in
// tests/golden/<run>.json, so a change of any figure is a reviewed diff.
// scripts/refresh-golden.sh rewrites them (SHARDLAB_REFRESH_GOLDEN=1).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using shardlab::testing::CliResult;
using shardlab::testing::Run;
using shardlab::testing::Slurp;

const fs::path kRuns = fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs";
const fs::path kGolden = fs::path(SHARDLAB_SOURCE_DIR) / "tests/golden";

// What a golden file pins: the strategy choice and the step, without the
// timeline (its figures are summarised here) or anything timed.
json Pinned(const json& simulated) {
  json result = simulated.at("result");
  result.erase("events");
  result.erase("wall_seconds");
  for (auto& stage : result.at("stages")) stage.erase("bubbles");
  return {{"strategy_choice", simulated.at("strategy_choice")}, {"result", result}};
}

// Every difference between `expected` and `actual`, with its JSON pointer;
// numbers agree within 1e-9 relative (compilers may round differently).
void Compare(const json& expected, const json& actual, const std::string& at, std::vector<std::string>* diffs) {
  if (expected.is_number() && actual.is_number()) {
    const double e = expected.get<double>(), a = actual.get<double>();
    if (std::abs(e - a) > 1e-9 * std::max(std::abs(e), std::abs(a)))
      diffs->push_back(at + ": " + expected.dump() + " -> " + actual.dump());
    return;
  }
  if (expected.type() != actual.type() || (expected.is_array() && expected.size() != actual.size())) {
    diffs->push_back(at + ": " + expected.dump().substr(0, 80) + " -> " + actual.dump().substr(0, 80));
    return;
  }
  if (expected.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : expected.items()) keys.insert(k);
    for (const auto& [k, v] : actual.items()) keys.insert(k);
    for (const std::string& k : keys) {
      if (!expected.contains(k) || !actual.contains(k)) {
        diffs->push_back(at + "/" + k + (expected.contains(k) ? ": gone" : ": new"));
        continue;
      }
      Compare(expected[k], actual[k], at + "/" + k, diffs);
    }
  } else if (expected.is_array()) {
    for (size_t i = 0; i < expected.size(); ++i) Compare(expected[i], actual[i], at + "/" + std::to_string(i), diffs);
  } else if (expected != actual) {
    diffs->push_back(at + ": " + expected.dump() + " -> " + actual.dump());
  }
}

TEST_CASE("every shipped run's analytical step matches its golden result", "[slow]") {
  const bool refresh = std::getenv("SHARDLAB_REFRESH_GOLDEN") != nullptr;
  std::set<std::string> runs;
  for (const auto& entry : fs::directory_iterator(kRuns))
    if (entry.path().extension() == ".json") runs.insert(entry.path().stem().string());
  for (const std::string& name : runs) {
    INFO(name);
    const CliResult r = Run("simulate configs/runs/" + name + ".json --engine analytical --json");
    REQUIRE(r.rc == 0);
    const json pinned = Pinned(json::parse(r.out));
    const fs::path golden = kGolden / (name + ".json");
    if (refresh) {
      std::ofstream(golden) << pinned.dump(2) << "\n";
      continue;
    }
    REQUIRE(fs::exists(golden));  // a new run needs its golden file: scripts/refresh-golden.sh
    std::vector<std::string> diffs;
    Compare(json::parse(Slurp(golden)), pinned, "", &diffs);
    std::string shown;
    for (size_t i = 0; i < diffs.size() && i < 20; ++i) shown += "\n  " + diffs[i];
    INFO(diffs.size() << " figures differ from " << golden.string() << " (scripts/refresh-golden.sh after review):"
                      << shown);
    CHECK(diffs.empty());
  }
  // No golden file outlives its run.
  for (const auto& entry : fs::directory_iterator(kGolden)) {
    INFO(entry.path().string());
    CHECK(runs.count(entry.path().stem().string()) == 1);
  }
}

}  // namespace
