#include "core/config/parallel_config.h"

#include "core/util/warning.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

using testing::Doc;
using testing::ExpectConfigError;

ParallelConfig Parse(const std::string& text, int64_t world = 8) {
  Doc doc(text, "/runs/run.json");
  return ReadParallelConfig(doc.root(), world);
}

// Returns the error for a parallel object; checks it points at `pointer`.
std::string ErrorAt(const std::string& text, const std::string& pointer, int64_t world = 8) {
  const ConfigError e = ExpectConfigError([&] { Parse(text, world); });
  CHECK(e.pointer() == pointer);
  CHECK(e.file() == "/runs/run.json");
  return e.what();
}

TEST_CASE("parallel settings default to MindSpore's defaults") {
  const ParallelConfig c = Parse(R"({"global_batch_size": 8})", 1);
  CHECK(c.parallel_mode == ParallelMode::kStandAlone);
  CHECK(c.device_num == 1);
  CHECK(c.global_rank == 0);
  CHECK_FALSE(c.gradients_mean);
  CHECK(c.gradient_fp32_sync);
  CHECK(c.search_mode == SearchMode::kDynamicProgramming);
  CHECK(c.comm_fusion.openstate);
  CHECK(c.comm_fusion.allreduce.mode == FusionSetting::Mode::kDefault);
  CHECK_FALSE(c.enable_parallel_optimizer);
  CHECK(c.parallel_optimizer_config.gradient_accumulation_shard);
  CHECK(c.parallel_optimizer_config.parallel_optimizer_threshold == 64);
  CHECK_FALSE(c.parameter_broadcast);
  CHECK(c.pipeline_stages == 1);
  CHECK_FALSE(c.full_batch);
  CHECK(c.dataset_strategy.kind == DatasetStrategy::Kind::kDataParallel);
  CHECK(c.strategy_ckpt_load_file.empty());
  CHECK(c.micro_batch_num == 1);
  CHECK_FALSE(c.recompute);
  CHECK(c.fully_use_devices);
  CHECK_FALSE(c.enable_alltoall);
}

TEST_CASE("device_num defaults to the world size and must be in 1..131072") {
  CHECK(Parse(R"({"parallel_mode": "data_parallel", "global_batch_size": 64})", 64).device_num == 64);
  CHECK_THAT(ErrorAt(R"({"device_num": 0, "global_batch_size": 8})", "/device_num"),
             Catch::Contains("expected an integer in 1..131072, got 0"));
  CHECK_THAT(ErrorAt(R"({"device_num": 131073, "global_batch_size": 8})", "/device_num"), Catch::Contains("1..131072"));
  CHECK_THAT(ErrorAt(R"({"device_num": 8.0, "global_batch_size": 8})", "/device_num"),
             Catch::Contains("expected an integer"));
  CHECK_THAT(ErrorAt(R"({"device_num": true, "global_batch_size": 8})", "/device_num"), Catch::Contains("got true"));
}

TEST_CASE("device_num past MindSpore's 4096 is simulated with a warning naming file and key") {
  std::vector<std::string> warnings;
  const WarningHandler previous = SetWarningHandler([&](const std::string& m) { warnings.push_back(m); });
  CHECK(Parse(R"({"parallel_mode": "data_parallel", "device_num": 16384, "global_batch_size": 16384})", 16384)
            .device_num == 16384);
  CHECK(
      Parse(R"({"parallel_mode": "data_parallel", "device_num": 4096, "global_batch_size": 4096})", 4096).device_num ==
      4096);
  SetWarningHandler(previous);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0],
             Catch::Contains("/runs/run.json: /device_num: device_num 16384 is past MindSpore's limit of 4096"));
}

TEST_CASE("global_rank is in 0..131071 and below device_num") {
  CHECK_THAT(
      ErrorAt(R"({"parallel_mode": "data_parallel", "global_rank": 131072, "global_batch_size": 8})", "/global_rank"),
      Catch::Contains("0..131071"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "data_parallel", "global_rank": 8, "global_batch_size": 8})", "/global_rank"),
             Catch::Contains("global_rank 8 is not below device_num 8"));
}

TEST_CASE("parallel_mode and search_mode accept MindSpore's names only") {
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto", "global_batch_size": 8})", "/parallel_mode"),
             Catch::Contains("did you mean 'semi_auto_parallel'"));
  CHECK_THAT(ErrorAt(R"({"search_mode": "dynamic_program", "global_batch_size": 8})", "/search_mode"),
             Catch::Contains("did you mean 'dynamic_programming'"));
  CHECK(Parse(R"({"parallel_mode": "auto_parallel", "search_mode": "sharding_propagation", "global_batch_size": 8})")
            .search_mode == SearchMode::kShardingPropagation);
}

TEST_CASE("boolean keys reject other types") {
  for (const char* key : {"gradients_mean", "gradient_fp32_sync", "enable_parallel_optimizer", "parameter_broadcast",
                          "full_batch", "recompute", "fully_use_devices", "enable_alltoall"}) {
    const std::string text = std::string(R"({"global_batch_size": 8, ")") + key + R"(": 1})";
    CHECK_THAT(ErrorAt(text, std::string("/") + key, 1), Catch::Contains("expected true or false"));
  }
}

TEST_CASE("unknown keys are rejected with the closest valid key") {
  CHECK_THAT(ErrorAt(R"({"pipeline_stage": 2, "global_batch_size": 8})", "/pipeline_stage"),
             Catch::Contains("did you mean 'pipeline_stages'"));
  CHECK_THAT(ErrorAt(R"({"zzzz": 2, "global_batch_size": 8})", "/zzzz"), Catch::Contains("valid keys"));
}

TEST_CASE("all_reduce_fusion_config is a non-empty list of strictly increasing positive integers") {
  const auto c =
      Parse(R"({"parallel_mode": "data_parallel", "all_reduce_fusion_config": [20, 35], "global_batch_size": 8})");
  CHECK(c.comm_fusion.allreduce.mode == FusionSetting::Mode::kIndex);
  CHECK(c.comm_fusion.allreduce.indices == std::vector<int64_t>{20, 35});
  CHECK_THAT(ErrorAt(R"({"all_reduce_fusion_config": [], "global_batch_size": 8})", "/all_reduce_fusion_config"),
             Catch::Contains("non-empty"));
  CHECK_THAT(ErrorAt(R"({"all_reduce_fusion_config": [3, 3], "global_batch_size": 8})", "/all_reduce_fusion_config/1"),
             Catch::Contains("strictly increasing"));
  CHECK_THAT(ErrorAt(R"({"all_reduce_fusion_config": [7, 3], "global_batch_size": 8})", "/all_reduce_fusion_config/1"),
             Catch::Contains("strictly increasing"));
  CHECK_THAT(ErrorAt(R"({"all_reduce_fusion_config": [0, 3], "global_batch_size": 8})", "/all_reduce_fusion_config/0"),
             Catch::Contains("expected an integer in 1.."));
  CHECK_THAT(ErrorAt(R"({"all_reduce_fusion_config": [true], "global_batch_size": 8})", "/all_reduce_fusion_config/0"),
             Catch::Contains("expected an integer"));
  CHECK_THAT(ErrorAt(R"({"all_reduce_fusion_config": 3, "global_batch_size": 8})", "/all_reduce_fusion_config"),
             Catch::Contains("expected a list"));
}

TEST_CASE("comm_fusion follows MindSpore's modes per operator") {
  const auto c = Parse(R"({"comm_fusion": {"openstate": true,
      "allreduce": {"mode": "size", "config": 32},
      "allgather": {"mode": "auto", "config": null},
      "reducescatter": {"mode": "size", "config": 16}}, "global_batch_size": 8})",
                       1);
  CHECK(c.comm_fusion.allreduce == FusionSetting{FusionSetting::Mode::kSize, 32, {}});
  CHECK(c.comm_fusion.allgather == FusionSetting{FusionSetting::Mode::kAuto, 64, {}});
  CHECK(c.comm_fusion.reducescatter.size_mb == 16);
  const auto index =
      Parse(R"({"comm_fusion": {"allreduce": {"mode": "index", "config": [2, 5]}}, "global_batch_size": 8})", 1);
  CHECK(index.comm_fusion.allreduce.indices == std::vector<int64_t>{2, 5});
  CHECK_FALSE(Parse(R"({"comm_fusion": {"openstate": false}, "global_batch_size": 8})", 1).comm_fusion.openstate);

  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"allgather": {"mode": "index", "config": [1]}}, "global_batch_size": 8})",
                     "/comm_fusion/allgather/mode"),
             Catch::Contains(R"(expected one of "auto", "size")"));
  CHECK_THAT(
      ErrorAt(R"({"comm_fusion": {"allreduce": {"mode": "auto"}}, "global_batch_size": 8})", "/comm_fusion/allreduce"),
      Catch::Contains(R"(missing required key "config")"));
  CHECK_THAT(
      ErrorAt(R"({"comm_fusion": {"allreduce": {"config": 3}}, "global_batch_size": 8})", "/comm_fusion/allreduce"),
      Catch::Contains(R"(missing required key "mode")"));
  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"allreduce": {"mode": "auto", "config": 3}}, "global_batch_size": 8})",
                     "/comm_fusion/allreduce/config"),
             Catch::Contains("takes no config"));
  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"allreduce": {"mode": "size", "config": "32"}}, "global_batch_size": 8})",
                     "/comm_fusion/allreduce/config"),
             Catch::Contains("expected an integer"));
  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"allreduce": {"mode": "size", "config": -1}}, "global_batch_size": 8})",
                     "/comm_fusion/allreduce/config"),
             Catch::Contains("got -1"));
  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"allreduce": {"mode": "index", "config": [4, 2]}}, "global_batch_size": 8})",
                     "/comm_fusion/allreduce/config/1"),
             Catch::Contains("strictly increasing"));
  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"allreduc": {"mode": "auto", "config": null}}, "global_batch_size": 8})",
                     "/comm_fusion/allreduc"),
             Catch::Contains("did you mean 'allreduce'"));
  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"allreduce": "auto"}, "global_batch_size": 8})", "/comm_fusion/allreduce"),
             Catch::Contains("expected an object"));
  CHECK_THAT(ErrorAt(R"({"comm_fusion": {"openstate": "yes"}, "global_batch_size": 8})", "/comm_fusion/openstate"),
             Catch::Contains("expected true or false"));
}

TEST_CASE("all_reduce_fusion_config and comm_fusion.allreduce cannot both be set") {
  CHECK_THAT(
      ErrorAt(R"({"all_reduce_fusion_config": [2], "comm_fusion": {"allreduce": {"mode": "auto", "config": null}},
                         "global_batch_size": 8})",
              "/all_reduce_fusion_config"),
      Catch::Contains("not both"));
}

TEST_CASE("parallel_optimizer_config keys and ranges") {
  const auto c = Parse(R"({"enable_parallel_optimizer": true, "parallel_optimizer_config":
      {"gradient_accumulation_shard": false, "parallel_optimizer_threshold": 0, "optimizer_weight_shard_size": 4},
      "global_batch_size": 8})",
                       1);
  CHECK_FALSE(c.parallel_optimizer_config.gradient_accumulation_shard);
  CHECK(c.parallel_optimizer_config.optimizer_level == OptimizerLevel::kLevel1);
  CHECK(c.parallel_optimizer_config.parallel_optimizer_threshold == 0);
  CHECK(c.parallel_optimizer_config.optimizer_weight_shard_size == 4);
  CHECK_THAT(ErrorAt(R"({"parallel_optimizer_config": {"parallel_optimizer_threshold": -1}, "global_batch_size": 8})",
                     "/parallel_optimizer_config/parallel_optimizer_threshold", 1),
             Catch::Contains("got -1"));
  CHECK_THAT(ErrorAt(R"({"parallel_optimizer_config": {"gradient_accumulation": true}, "global_batch_size": 8})",
                     "/parallel_optimizer_config/gradient_accumulation", 1),
             Catch::Contains("did you mean 'gradient_accumulation_shard'"));
  const auto level3 = Parse(R"({"enable_parallel_optimizer": true, "parallel_optimizer_config":
      {"optimizer_level": "level3"}, "global_batch_size": 8})",
                            1);
  CHECK(level3.parallel_optimizer_config.optimizer_level == OptimizerLevel::kLevel3);
  CHECK(ToJson(level3)["parallel_optimizer_config"]["optimizer_level"] == "level3");
  CHECK_THAT(ErrorAt(R"({"parallel_optimizer_config": {"optimizer_level": "zero3"}, "global_batch_size": 8})",
                     "/parallel_optimizer_config/optimizer_level", 1),
             Catch::Contains("level1") && Catch::Contains("level3"));
}

TEST_CASE("pipeline_stages divides device_num and needs semi or auto parallel") {
  const auto c = Parse(R"({"parallel_mode": "semi_auto_parallel", "pipeline_stages": 4, "micro_batch_num": 4,
                           "global_batch_size": 16})");
  CHECK(c.devices_per_stage() == 2);
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel", "pipeline_stages": 3, "micro_batch_num": 3,
                         "global_batch_size": 6})",
                     "/pipeline_stages"),
             Catch::Contains("device_num 8 is not divisible by pipeline_stages 3"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "data_parallel", "pipeline_stages": 2, "micro_batch_num": 2,
                         "global_batch_size": 16})",
                     "/pipeline_stages"),
             Catch::Contains("semi_auto_parallel"));
  CHECK_THAT(ErrorAt(R"({"pipeline_stages": 0, "global_batch_size": 8})", "/pipeline_stages"),
             Catch::Contains("1..131072"));
}

TEST_CASE("micro_batch_num is at least pipeline_stages and divides global_batch_size") {
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel", "pipeline_stages": 4, "micro_batch_num": 2,
                         "global_batch_size": 16})",
                     "/micro_batch_num"),
             Catch::Contains("micro_batch_num 2 must be at least pipeline_stages 4"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel", "micro_batch_num": 3, "global_batch_size": 16})",
                     "/global_batch_size"),
             Catch::Contains("not divisible by micro_batch_num 3"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel"})", ""),
             Catch::Contains(R"(missing required key "global_batch_size")"));
}

TEST_CASE("stand_alone runs on one device") {
  CHECK_THAT(ErrorAt(R"({"device_num": 8, "global_batch_size": 8})", "/device_num"), Catch::Contains("stand_alone"));
  CHECK(Parse(R"({"global_batch_size": 8})", 4096).device_num == 1);
}

TEST_CASE("data_parallel needs a batch the devices can split") {
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "data_parallel", "global_batch_size": 12})", "/global_batch_size"),
             Catch::Contains("12 samples over 8 devices"));
}

TEST_CASE("dataset_strategy forms and its conflict with full_batch") {
  CHECK(Parse(R"({"parallel_mode": "semi_auto_parallel", "dataset_strategy": "full_batch", "global_batch_size": 8})")
            .full_batch);
  const auto shard = Parse(R"({"parallel_mode": "semi_auto_parallel", "dataset_strategy": [[4, 1], [4]],
                               "global_batch_size": 8})");
  CHECK(shard.dataset_strategy.kind == DatasetStrategy::Kind::kShard);
  CHECK(shard.dataset_strategy.shard == std::vector<std::vector<int64_t>>{{4, 1}, {4}});
  CHECK(Parse(R"({"parallel_mode": "semi_auto_parallel", "full_batch": true, "global_batch_size": 8})")
            .dataset_strategy.kind == DatasetStrategy::Kind::kFullBatch);
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel", "full_batch": true, "dataset_strategy": "data_parallel",
                         "global_batch_size": 8})",
                     "/dataset_strategy"),
             Catch::Contains("cannot be used together"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "data_parallel", "dataset_strategy": [[8, 1]], "global_batch_size": 8})",
                     "/dataset_strategy"),
             Catch::Contains("semi_auto_parallel"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel", "dataset_strategy": "model_parallel",
                         "global_batch_size": 8})",
                     "/dataset_strategy"),
             Catch::Contains("expected one of"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel", "dataset_strategy": [[8, 0]],
                         "global_batch_size": 8})",
                     "/dataset_strategy/0/1"),
             Catch::Contains("got 0"));
  CHECK_THAT(ErrorAt(R"({"parallel_mode": "semi_auto_parallel", "dataset_strategy": [],
                         "global_batch_size": 8})",
                     "/dataset_strategy"),
             Catch::Contains("at least one"));
}

TEST_CASE("strategy checkpoint paths resolve against the run file's folder") {
  const auto c = Parse(R"({"strategy_ckpt_load_file": "ckpt/in.json", "strategy_ckpt_save_file": "/tmp/out.json",
                           "global_batch_size": 8})",
                       1);
  CHECK(c.strategy_ckpt_load_file == "/runs/ckpt/in.json");
  CHECK(c.strategy_ckpt_save_file == "/tmp/out.json");
}

TEST_CASE("parallel settings round-trip through JSON") {
  const auto c = Parse(R"({"parallel_mode": "semi_auto_parallel", "pipeline_stages": 2, "micro_batch_num": 4,
      "global_batch_size": 32, "gradients_mean": true, "comm_fusion": {"allreduce": {"mode": "index", "config": [3, 7]},
      "allgather": {"mode": "size", "config": 8}}, "enable_parallel_optimizer": true, "recompute": true,
      "dataset_strategy": [[4, 1]], "fully_use_devices": false})");
  const nlohmann::json j = ToJson(c);
  Doc doc(j.dump(), "round.json");
  CHECK(ReadParallelConfig(doc.root(), 8) == c);
}

}  // namespace
}  // namespace shardlab
