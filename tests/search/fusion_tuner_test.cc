#include "core/search/fusion_tuner.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "core/flow/prepared_run.h"
#include "core/util/json_reader.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

RunSpec Shipped(const std::string& name) { return LoadRunFile(testing::SourcePath("configs/runs/" + name + ".json")); }

TEST_CASE("the fusion tuner lists MindSpore's defaults first and verifies the default and the run's own setting") {
  const RunSpec run = Shipped("bert-large-a100-8");
  const PreparedRun prepared = Prepare(run);
  FusionTuning tuning;
  tuning.mode = DefaultFusionTuneMode(run, Collective::kAllReduce);
  CHECK(tuning.mode == FusionTuneMode::kIndex);
  const FusionSearch search = SearchFusion(run, prepared.sharded, tuning);
  REQUIRE(search.baselines >= 3);
  CHECK(search.candidates[0].kind == FusionCandidateKind::kDefault);
  CHECK(search.candidates[0].buckets == 1);
  size_t current = 0;
  for (size_t i = 0; i < search.candidates.size(); ++i) current += search.candidates[i].current;
  CHECK(current == 1);
  // The tuned candidates: the fast model's optimal split per bucket count, never worse than one bucket's step
  // by more than the model's own arithmetic allows for more buckets.
  size_t tuned = 0;
  for (const FusionCandidate& c : search.candidates)
    if (c.kind == FusionCandidateKind::kTuned) {
      ++tuned;
      CHECK(c.setting.mode == FusionSetting::Mode::kIndex);
      CHECK(c.buckets == c.setting.indices.size() + 1);
    }
  CHECK(tuned > 0);
  REQUIRE(!search.to_verify.empty());
  CHECK(search.to_verify[0] == 0);  // the default is always verified
  for (const auto& [buckets, seconds] : search.curve) CHECK(seconds > 0);
}

TEST_CASE("the fusion winner is the best verified candidate; an earlier one keeps a tie") {
  std::vector<FusionCandidate> candidates(3);
  candidates[0].fast_seconds = 3;
  candidates[1].fast_seconds = 1;
  candidates[2].fast_seconds = 2;
  CHECK(ChooseFusionWinner(candidates, {2.0, std::nullopt, 1.5}) == 2);
  CHECK(ChooseFusionWinner(candidates, {2.0, std::nullopt, 2.0 * (1 - 1e-9)}) == 0);
  // Nothing verified: the fast model's best.
  CHECK(ChooseFusionWinner(candidates, {std::nullopt, std::nullopt, std::nullopt}) == 1);
}

TEST_CASE("the fusion tuner refuses what MindSpore would ignore, naming the run file") {
  RunSpec run = Shipped("bert-large-a100-8");
  const PreparedRun prepared = Prepare(run);
  FusionTuning tuning;
  tuning.op = Collective::kAllGather;
  tuning.mode = FusionTuneMode::kSize;
  try {
    SearchFusion(run, prepared.sharded, tuning);
    FAIL("accepted");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("bert-large-a100-8.json: no allgather fusion to tune") != std::string::npos);
  }
  run.parallel.comm_fusion.openstate = false;
  tuning.op = Collective::kAllReduce;
  CHECK_THROWS_WITH(SearchFusion(run, prepared.sharded, tuning), Catch::Contains("openstate is false"));
}

TEST_CASE("a tuned run file changes only the tuned key and rebases relative paths") {
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() / "shardlab-fusion-tuner-test";
  fs::remove_all(folder);
  fs::create_directories(folder / "out");
  const std::string in = (folder / "run.json").string(), out = (folder / "out" / "tuned.json").string();
  std::ofstream(in) << R"({"name": "r", "cluster": "clusters/c.json", "model": "/abs/m.json",
    "parallel": {"device_num": 8, "comm_fusion": {"allgather": {"mode": "size", "config": 32}}},
    "ascend_config": {"parallel_speed_up_json_path": "speed_up.json"}})";
  FusionSetting split;
  split.mode = FusionSetting::Mode::kIndex;
  split.indices = {3, 9};
  WriteTunedRunFile(in, {}, out, Collective::kAllReduce, split);
  const nlohmann::json doc = ReadJsonFile(out);
  CHECK(doc["cluster"] == "../clusters/c.json");
  CHECK(doc["model"] == "/abs/m.json");
  CHECK(doc["ascend_config"]["parallel_speed_up_json_path"] == "../speed_up.json");
  CHECK(doc["parallel"]["all_reduce_fusion_config"] == nlohmann::json({3, 9}));
  CHECK(doc["parallel"]["comm_fusion"]["allgather"]["config"] == 32);
  std::ifstream written(out);
  const std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"name\"") < text.find("\"cluster\""));  // the author's key order
  CHECK(text.find("\"cluster\"") < text.find("\"model\""));
  fs::remove_all(folder);
}

}  // namespace
}  // namespace shardlab
