// A configured strategy that breaks a rule is a ConfigError at the place it
// was written: a model's `shard`, a strategy checkpoint's entry (JSON or
// protobuf) or the builder parameters its strategies come from.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/flow/prepared_run.h"
#include "core/search/strategy_proto.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

namespace fs = std::filesystem;

// A semi_auto_parallel run on 8 Ascend devices of one MatMul whose strategy is `shard`.
nlohmann::json MatMulRun(const nlohmann::json& shard) {
  nlohmann::json op = {{"name", "mm"}, {"type", "MatMul"}, {"inputs", {"x", "w"}}};
  if (!shard.is_null()) op["shard"] = shard;
  return {{"name", "one-matmul"},
          {"cluster", testing::SourcePath("configs/clusters/ascend910-atlas900.json")},
          {"model",
           {{"name", "mm"},
            {"graph",
             {{"name", "mm"},
              {"tensors",
               {{{"name", "x"}, {"kind", "input"}, {"shape", {64, 32}}, {"dtype", "float16"}},
                {{"name", "w"}, {"kind", "parameter"}, {"shape", {32, 16}}, {"dtype", "float16"}}}},
              {"operators", {op}}}}}},
          {"parallel", {{"parallel_mode", "semi_auto_parallel"}, {"device_num", 8}, {"global_batch_size", 64}}}};
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "shardlab-strategy-errors";
  fs::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

ConfigError PrepareError(const nlohmann::json& run, const std::string& file = "run.json") {
  const std::string path = WriteFile(file, run.dump());
  return testing::ExpectConfigError([&] { Prepare(LoadRunFile(path)); });
}

TEST_CASE("a model's shard strategy that breaks a rule names the run file and the shard's JSON pointer") {
  const ConfigError e = PrepareError(MatMulRun({{3, 1}, {1, 1}}));
  CHECK(fs::path(e.file()).filename() == "run.json");
  CHECK(e.pointer() == "/model/graph/operators/0/shard");
  CHECK_THAT(e.what(), Catch::Contains("operator \"mm\"") && Catch::Contains("power of two"));
}

TEST_CASE("a checkpoint's strategy that breaks a rule names the checkpoint and its entry") {
  SECTION("JSON") {
    const std::string ckpt =
        WriteFile("bad.ckpt.json", R"({"operators": {"mm": {"type": "MatMul", "strategy": [[2, 4], [2, 1]]}}})");
    nlohmann::json run = MatMulRun(nullptr);
    run["parallel"]["strategy_ckpt_load_file"] = ckpt;
    const ConfigError e = PrepareError(run);
    CHECK(e.file() == ckpt);
    CHECK(e.pointer() == "/operators/mm/strategy");
    CHECK_THAT(e.what(), Catch::Contains("operator \"mm\""));
  }
  SECTION("protobuf") {
    ProtoStrategyMap map;
    map.items["mm"] = {0, Strategy{{16, 1}, {1, 1}}};
    const std::string ckpt = WriteFile("bad.ckpt", EncodeStrategyMap(map));
    nlohmann::json run = MatMulRun(nullptr);
    run["parallel"]["strategy_ckpt_load_file"] = ckpt;
    const ConfigError e = PrepareError(run);
    CHECK(e.file() == ckpt);
    CHECK(e.pointer() == "/parallel_strategy_item/mm");
  }
  SECTION("a protobuf file that is not a checkpoint") {
    const std::string ckpt = WriteFile("garbage.ckpt", "\x12\x05\x0a");
    nlohmann::json run = MatMulRun(nullptr);
    run["parallel"]["strategy_ckpt_load_file"] = ckpt;
    const ConfigError e = PrepareError(run);
    CHECK(e.file() == ckpt);
    CHECK_THAT(e.what(), Catch::Contains("not a MindSpore strategy checkpoint"));
  }
}

TEST_CASE("strategies a builder derives from its parameters name the run's model") {
  nlohmann::json run = ReadJsonFile(testing::SourcePath("configs/runs/seed-ffn-ascend-8.json"));
  run["cluster"] = testing::SourcePath("configs/clusters/ascend910-atlas900.json");
  run["model"] = testing::SourcePath("configs/models/seed-ffn.json");
  run["parallel"]["parallel_mode"] = "semi_auto_parallel";
  run["parallel"].erase("search_mode");
  run["parallel"]["device_num"] = 4;  // the seed strategies split 8 ways
  const ConfigError e = PrepareError(run, "ffn-on-4.json");
  CHECK(fs::path(e.file()).filename() == "ffn-on-4.json");
  CHECK(e.pointer() == "/model");
}

}  // namespace
}  // namespace shardlab
