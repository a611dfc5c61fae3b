#include "core/config/run_config.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/report/run_summary.h"
#include "core/util/warning.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

using testing::Doc;
using testing::ExpectConfigError;
using testing::SourcePath;

const char* kShippedRuns[] = {"gpt3-175b-ascend-4096",      "gpt3-175b-h100-4096",   "pangu-alpha-200b-ascend-2048",
                              "pangu-alpha-13b-ascend-512", "bert-large-ascend-512", "bert-large-a100-8",
                              "resnet50-ascend-4096",       "resnet50-ascend-8",     "wide-deep-host-ascend-8",
                              "seed-ffn-ascend-8"};

TEST_CASE("every shipped run loads and builds its graph") {
  for (const char* name : kShippedRuns) {
    INFO(name);
    const RunSpec run = LoadRunFile(SourcePath(std::string("configs/runs/") + name + ".json"));
    const Graph graph = BuildRunGraph(run);
    CHECK(run.name == name);
    CHECK(graph.operators().size() > 5);
    CHECK(graph.stage_count() == run.parallel.pipeline_stages);
  }
}

TEST_CASE("the 4096-device GPT-3 run resolves its files and settings") {
  const RunSpec run = LoadRunFile(SourcePath("configs/runs/gpt3-175b-ascend-4096.json"));
  CHECK(run.cluster.name == "ascend910-atlas900");
  CHECK(std::filesystem::path(run.model_file).filename() == "gpt3-175b.json");
  CHECK(run.parallel.device_num == 4096);
  CHECK(run.parallel.devices_per_stage() == 256);
  CHECK(run.parallel.micro_batch_size() == 64);
  CHECK(run.model.params.Int("batch") == 64);
  CHECK(run.model.params.Int("model_parallel") == 8);
  const Graph graph = BuildRunGraph(run);
  const RunSummary s = SummarizeRun(run, graph);
  // The Megatron-LM count: 96 B s l h^2 (1 + s/6h + V/16lh) with full recompute.
  const double B = 2048, S = 2048, L = 96, H = 12288, V = 51200;
  const double megatron = 96 * B * S * L * H * H * (1 + S / (6 * H) + V / (16 * L * H));
  CHECK(s.step_flops == Approx(megatron).epsilon(0.03));
  CHECK(s.ideal_step_seconds == Approx(s.step_flops / (4096 * 256e12)));
}

std::string ErrorOf(const std::string& text, std::string* pointer = nullptr) {
  Doc doc(text, SourcePath("configs/runs/inline.json"));
  const ConfigError e = ExpectConfigError([&] { ReadRunSpec(doc.root()); });
  if (pointer) *pointer = e.pointer();
  return e.what();
}

TEST_CASE("run files check the rules between their sections") {
  const std::string head = R"({"name": "r", "cluster": "../clusters/ascend910-atlas900.json", )";
  std::string pointer;
  CHECK_THAT(ErrorOf(head + R"("model": "../models/missing.json", "parallel": {"global_batch_size": 8}})", &pointer),
             Catch::Contains("does not exist"));
  CHECK(pointer == "/model");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/gpt3-175b.json", "model_params": {"data_parallel": 3},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 8, "global_batch_size": 8}})",
                     &pointer),
             Catch::Contains("data_parallel x model_parallel = 3 does not divide the 8 devices"));
  CHECK(pointer == "/model_params");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/gpt3-175b.json", "model_params": {"data_parallel": 8},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 8, "global_batch_size": 4}})",
                     &pointer),
             Catch::Contains("cannot be split over data_parallel 8"));
  CHECK(pointer == "/parallel/global_batch_size");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/gpt3-175b.json",
      "model_params": {"data_parallel": 2, "model_parallel": 2, "context_parallel": 4},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 8, "global_batch_size": 8}})",
                     &pointer),
             Catch::Contains("data_parallel x model_parallel x context_parallel = 16 does not divide the 8 devices"));
  CHECK(pointer == "/model_params");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/gpt3-175b.json",
      "model_params": {"data_parallel": 2, "model_parallel": 2, "context_parallel": 2, "attention": "flash"},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 8, "global_batch_size": 4,
                   "micro_batch_interleaved": 2}})",
                     &pointer),
             Catch::Contains("which under context_parallel 2 is a chunk of each of its sequences"));
  CHECK(pointer == "/parallel/micro_batch_interleaved");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/gpt3-175b.json", "model_params": {"batch": 8},
      "parallel": {"global_batch_size": 4}})",
                     &pointer),
             Catch::Contains("global_batch_size / micro_batch_num"));
  CHECK(pointer == "/model_params/batch");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"engine": "ns3"}})",
                     &pointer),
             Catch::Contains(R"("simgrid", "analytical", "both")"));
  CHECK(pointer == "/simulation/engine");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"pipeline_schedule": "interleaved"}})",
                     &pointer),
             Catch::Contains("virtual_pipeline_chunks >= 2"));
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"virtual_pipeline_chunks": 2}})",
                     &pointer),
             Catch::Contains("needs pipeline_schedule"));
  CHECK(pointer == "/simulation/virtual_pipeline_chunks");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"pipeline_schedule": "gpipe", "overlap_forward_backward": true}})",
                     &pointer),
             Catch::Contains("which gpipe has none of"));
  CHECK(pointer == "/simulation/overlap_forward_backward");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"mode": "infer", "overlap_forward_backward": true}})",
                     &pointer),
             Catch::Contains("an inference step has none of"));
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4,
      "enable_parallel_optimizer": true, "parallel_optimizer_config": {"optimizer_level": "level3"}},
      "simulation": {"overlap_forward_backward": true}})",
                     &pointer),
             Catch::Contains("not built with optimizer_level level3"));
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"overlap_forward_backward": 1}})",
                     &pointer),
             Catch::Contains("expected true, false or a non-empty list of communication dimensions (tensor, data, "
                             "pipeline, expert, context, sequence)"));
  CHECK(pointer == "/simulation/overlap_forward_backward");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"overlap_forward_backward": ["expert", "experts"]}})",
                     &pointer),
             Catch::Contains("expected one of"));
  CHECK(pointer == "/simulation/overlap_forward_backward/1");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"overlap_forward_backward": ["expert", "expert"]}})",
                     &pointer),
             Catch::Contains("listed twice"));
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4,
      "recompute_modules": ["mla_up_proj", "attention"]}})",
                     &pointer),
             Catch::Contains("expected one of"));
  CHECK(pointer == "/parallel/recompute_modules/1");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4,
      "recompute_modules": ["moe_act", "moe_act"]}})",
                     &pointer),
             Catch::Contains("listed twice"));
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4,
      "recompute": true, "recompute_modules": ["layernorm"]}})",
                     &pointer),
             Catch::Contains("recompute already recomputes the whole layer"));
  CHECK(pointer == "/parallel/recompute_modules");
  CHECK_THAT(ErrorOf(head + R"("model": "../models/resnet50.json", "parallel": {"global_batch_size": 4},
      "simulation": {"collective_algorithms": {"allreduce": "butterfly"}}})",
                     &pointer),
             Catch::Contains("expected one of"));
  CHECK(pointer == "/simulation/collective_algorithms/allreduce");
  CHECK_THAT(ErrorOf(head + R"("modle": "../models/resnet50.json", "parallel": {"global_batch_size": 4}})", &pointer),
             Catch::Contains(R"(missing required key "model")"));
}

TEST_CASE("MindSpore's pipeline_config names the pipeline schedule") {
  const std::string head = R"({"name": "r", "cluster": "../clusters/ascend910-atlas900.json",
      "model": "../models/gpt3-175b.json", "model_params": {"data_parallel": 2, "model_parallel": 2},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 16, "pipeline_stages": 4,
                   "micro_batch_num": 8, "global_batch_size": 16, )";
  auto schedule_of = [&](const std::string& rest) {
    Doc doc(head + rest, SourcePath("configs/runs/inline.json"));
    return ReadRunSpec(doc.root()).simulation;
  };
  CHECK(schedule_of(R"("pipeline_config": {"pipeline_interleave": false, "pipeline_scheduler": "1f1b"}}})")
            .pipeline_schedule == PipelineSchedule::k1F1B);
  CHECK(schedule_of(R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "gpipe"}}})")
            .pipeline_schedule == PipelineSchedule::kGPipe);
  const SimulationOptions interleaved =
      schedule_of(R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "1f1b"}},
                     "simulation": {"virtual_pipeline_chunks": 2}})");
  CHECK(interleaved.pipeline_schedule == PipelineSchedule::kInterleaved);
  CHECK(interleaved.virtual_pipeline_chunks == 2);
  // The same schedule named twice is fine.
  CHECK(schedule_of(R"("pipeline_config": {"pipeline_interleave": false, "pipeline_scheduler": "1f1b"}},
                       "simulation": {"pipeline_schedule": "1f1b"}})")
            .pipeline_schedule == PipelineSchedule::k1F1B);

  std::string pointer;
  CHECK_THAT(
      ErrorOf(head + R"("pipeline_config": {"pipeline_interleave": false, "pipeline_scheduler": "gpipe"}}})", &pointer),
      Catch::Contains("only with pipeline_interleave true"));
  CHECK(pointer == "/parallel/pipeline_config/pipeline_scheduler");
  // zero_bubble_v: two chunks in a V, at least 2 micro-batches per stage.
  const SimulationOptions v =
      schedule_of(R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "zero_bubble_v"}}})");
  CHECK(v.pipeline_schedule == PipelineSchedule::kZeroBubbleV);
  CHECK(v.virtual_pipeline_chunks == 2);
  std::string few = head;
  const std::string eight = R"("micro_batch_num": 8)";
  few.replace(few.find(eight), eight.size(), R"("micro_batch_num": 4)");
  CHECK_THAT(ErrorOf(few + R"("recompute": false}, "simulation": {"pipeline_schedule": "zero_bubble_v"}})", &pointer),
             Catch::Contains("micro_batch_num >= 2 x pipeline_stages"));
  CHECK(pointer == "/parallel/micro_batch_num");
  // dualpipe: two chunks (its directions), an even stage count, an even micro_batch_num of at least 2S.
  const SimulationOptions dual =
      schedule_of(R"("recompute": false}, "simulation": {"pipeline_schedule": "dualpipe"}})");
  CHECK(dual.pipeline_schedule == PipelineSchedule::kDualPipe);
  CHECK(dual.virtual_pipeline_chunks == 2);
  CHECK_THAT(ErrorOf(few + R"("recompute": false}, "simulation": {"pipeline_schedule": "dualpipe"}})", &pointer),
             Catch::Contains("an even micro_batch_num of at least 2 x pipeline_stages"));
  CHECK(pointer == "/parallel/micro_batch_num");
  std::string odd = head;
  odd.replace(odd.find(eight), eight.size(), R"("micro_batch_num": 9)");
  const std::string sixteen = R"("global_batch_size": 16)";
  odd.replace(odd.find(sixteen), sixteen.size(), R"("global_batch_size": 18)");
  CHECK_THAT(ErrorOf(odd + R"("recompute": false}, "simulation": {"pipeline_schedule": "dualpipe"}})", &pointer),
             Catch::Contains("here 9 micro-batches over 4 stages"));
  std::string two = head;
  const std::string four = R"("pipeline_stages": 4)";
  two.replace(two.find(four), four.size(), R"("pipeline_stages": 1)");
  CHECK_THAT(ErrorOf(two + R"("recompute": false}, "simulation": {"pipeline_schedule": "dualpipe"}})", &pointer),
             Catch::Contains("an even number of pipeline stages, 2 or more; here 1"));
  CHECK(pointer == "/parallel/pipeline_stages");
  CHECK_THAT(ErrorOf(head + R"("recompute": false}, "simulation": {"pipeline_schedule": "dualpipe",
                     "virtual_pipeline_chunks": 3}})",
                     &pointer),
             Catch::Contains("runs exactly 2 chunks per stage"));
  // MindSpore's ZBV_offset tunes zero_bubble_v alone.
  CHECK_THAT(ErrorOf(head + R"("recompute": false}, "simulation": {"pipeline_schedule": "dualpipe",
                     "zbv_offset": 1}})",
                     &pointer),
             Catch::Contains("tunes the zero_bubble_v schedule, not \"dualpipe\""));
  CHECK(pointer == "/simulation/zbv_offset");
  // The sequence-pipelined schedulers: seqvpp and seqsmartvpp run chunks.
  CHECK(schedule_of(R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "seqpipe"}}})")
            .pipeline_schedule == PipelineSchedule::kSeqPipe);
  CHECK(schedule_of(R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "seqsmartvpp"}},
                       "simulation": {"virtual_pipeline_chunks": 2}})")
            .pipeline_schedule == PipelineSchedule::kSeqSmartVpp);
  CHECK_THAT(
      ErrorOf(head + R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "seqvpp"}}})", &pointer),
      Catch::Contains("virtual_pipeline_chunks"));
  CHECK(pointer == "/parallel/pipeline_config");
  CHECK_THAT(
      ErrorOf(head + R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "2f2b"}}})", &pointer),
      Catch::Contains("zero_bubble_v"));
  CHECK_THAT(ErrorOf(head + R"("pipeline_config": {"pipeline_scheduler": "1f1b"}}})", &pointer),
             Catch::Contains("pipeline_interleave"));
  CHECK_THAT(
      ErrorOf(head + R"("pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "1f1b"}}})", &pointer),
      Catch::Contains("pp_interleave_num"));
  CHECK(pointer == "/parallel/pipeline_config");
  CHECK_THAT(ErrorOf(head + R"("pipeline_config": {"pipeline_interleave": false, "pipeline_scheduler": "1f1b"}},
                     "simulation": {"pipeline_schedule": "gpipe"}})",
                     &pointer),
             Catch::Contains("give one of the two"));
  CHECK(pointer == "/simulation/pipeline_schedule");
}

TEST_CASE("seq_split_num needs a sequence-pipelined schedule, and seqvpp its stages") {
  const std::string head = R"({"name": "r", "cluster": "../clusters/ascend910-atlas900.json",
      "model": "../models/gpt3-175b.json", "model_params": {"data_parallel": 2, "model_parallel": 2, "seq_split_num": 8},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 16, "pipeline_stages": 4,
                   "micro_batch_num": 8, "global_batch_size": 16)";
  std::string pointer;
  CHECK_THAT(ErrorOf(head + "}}", &pointer), Catch::Contains("only the pipeline schedules seqpipe, seqvpp"));
  CHECK(pointer == "/model_params/seq_split_num");
  const std::string seqvpp =
      R"(, "pipeline_config": {"pipeline_interleave": true, "pipeline_scheduler": "seqvpp"}},
         "simulation": {"virtual_pipeline_chunks": 2)";
  CHECK_THAT(ErrorOf(head + seqvpp + "}}", &pointer), Catch::Contains("pipeline_stages >= seq_split_num"));
  CHECK(pointer == "/parallel/pipeline_config");
  CHECK_THAT(ErrorOf(head + R"(}, "simulation": {"pipeline_schedule": "seqpipe", "overlap_forward_backward": true}})",
                     &pointer),
             Catch::Contains("not built with pipeline_schedule \"seqpipe\""));
  CHECK(pointer == "/simulation/overlap_forward_backward");
}

// Collects the warnings given while it lives.
struct CapturedWarnings {
  std::vector<std::string> messages;
  WarningHandler previous;
  CapturedWarnings() : previous(SetWarningHandler([this](const std::string& m) { messages.push_back(m); })) {}
  ~CapturedWarnings() { SetWarningHandler(previous); }
};

TEST_CASE("ascend_config reads MindSpore's pp_1f1b_overlap, inline or from its parallel speed-up file") {
  const std::string head = R"({"name": "r", "cluster": "../clusters/ascend910-atlas900.json",
      "model": "../models/gpt3-175b.json", "model_params": {"data_parallel": 2, "model_parallel": 2},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 16, "pipeline_stages": 4,
                   "micro_batch_num": 8, "global_batch_size": 16}, )";
  const auto read = [&](const std::string& text) {
    Doc doc(text, SourcePath("configs/runs/inline.json"));
    return ReadRunSpec(doc.root());
  };
  {
    CapturedWarnings warnings;
    // Operator types, of any dimension: the Morph ones are the same kinds; repeats and empty entries drop.
    const RunSpec run = read(head + R"("ascend_config": {"parallel_speed_up_json": {
        "pp_1f1b_overlap": "AlltoAllV,AlltoAll,,MorphAllGather,AllGather,AlltoAll", "matmul_grad_comm_overlap": true,
        "recomputation_communication_overlap": true, "compute_communicate_fusion_level": true},
        "precision_mode": "must_keep_origin_dtype"}})");
    CHECK(run.ascend_config.pp_1f1b_overlap ==
          std::vector<OverlapOperator>{OverlapOperator::kAlltoAllV, OverlapOperator::kAlltoAll,
                                       OverlapOperator::kMorphAllGather, OverlapOperator::kAllGather});
    const PassOverlap overlap = ForwardBackwardOverlap(run);
    CHECK(overlap.collectives == std::vector<Collective>{Collective::kAllGather, Collective::kAllToAll});
    CHECK(overlap.dimensions.size() == static_cast<size_t>(kCommDimensions));
    CHECK(overlap.Moves(CommDimension::kExpert, Collective::kAllToAll));
    CHECK(overlap.Moves(CommDimension::kTensor, Collective::kAllGather));
    CHECK_FALSE(overlap.Moves(CommDimension::kTensor, Collective::kReduceScatter));
    // MindSpore's other keys are read, with MindSpore's types (a bool is an int in Python), not modelled:
    // one warning each.
    REQUIRE(warnings.messages.size() == 4);
    CHECK_THAT(warnings.messages[0], Catch::Contains("\"compute_communicate_fusion_level\" is not modelled"));
    CHECK_THAT(warnings.messages[1], Catch::Contains("\"matmul_grad_comm_overlap\" is not modelled"));
    CHECK_THAT(warnings.messages[3], Catch::Contains("\"precision_mode\" is not modelled"));
    // The run written back, cluster and model inline, reads the same.
    const nlohmann::json written = ToJson(run);
    CHECK(written["ascend_config"]["parallel_speed_up_json"]["pp_1f1b_overlap"] ==
          "AlltoAllV,AlltoAll,MorphAllGather,AllGather");
    CHECK(ReadRunSpec(JsonNode(written, "written.json")).ascend_config == run.ascend_config);
  }
  // "" is MindSpore's default: off; so is a path of "" or null beside the inline keys.
  CHECK(ForwardBackwardOverlap(read(head + R"("ascend_config": {"parallel_speed_up_json": {"pp_1f1b_overlap": ""}}})"))
            .empty());
  CHECK(read(head + R"("ascend_config": {"parallel_speed_up_json_path": null,
                                          "parallel_speed_up_json": {"pp_1f1b_overlap": "AlltoAll"}}})")
            .ascend_config.pp_1f1b_overlap.size() == 1);
  CHECK(read(head + R"("ascend_config": {"parallel_speed_up_json_path": ""}})").ascend_config.pp_1f1b_overlap.empty());
  // MindSpore's own form: a file, its path relative to the run file.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "shardlab-ascend-config-test";
  std::filesystem::create_directories(dir / "speed_up");
  std::ofstream(dir / "speed_up" / "parallel_speed_up.json") << R"({"pp_1f1b_overlap": "AlltoAll"})";
  Doc from_file(R"({"name": "r", "cluster": ")" + SourcePath("configs/clusters/ascend910-atlas900.json") +
                    R"(", "model": ")" + SourcePath("configs/models/gpt3-175b.json") +
                    R"(", "model_params": {"data_parallel": 2, "model_parallel": 2},
      "parallel": {"parallel_mode": "semi_auto_parallel", "device_num": 16, "pipeline_stages": 4,
                   "micro_batch_num": 8, "global_batch_size": 16},
      "ascend_config": {"parallel_speed_up_json_path": "speed_up/parallel_speed_up.json"}})",
                (dir / "run.json").string());
  CHECK(ForwardBackwardOverlap(ReadRunSpec(from_file.root())).collectives ==
        std::vector<Collective>{Collective::kAllToAll});

  std::string pointer;
  CHECK_THAT(
      ErrorOf(head + R"("ascend_config": {"parallel_speed_up_json": {"pp_1f1b_overlap": "AlltoAll,Send"}}})", &pointer),
      Catch::Contains("expected comma-separated operator types among AlltoAll, AlltoAllV, AllGather") &&
          Catch::Contains("got \"Send\""));
  CHECK(pointer == "/ascend_config/parallel_speed_up_json/pp_1f1b_overlap");
  CHECK_THAT(ErrorOf(head + R"("ascend_config": {"parallel_speed_up_json": {"pp_1f1b_overlap": true}}})", &pointer),
             Catch::Contains("expected a string"));
  CHECK_THAT(ErrorOf(head + R"("ascend_config": {"parallel_speed_up_json": {"pp_overlap": "AlltoAll"}}})", &pointer),
             Catch::Contains("MindSpore's parallel speed-up keys are"));
  CHECK(pointer == "/ascend_config/parallel_speed_up_json/pp_overlap");
  CHECK_THAT(ErrorOf(head + R"("ascend_config": {"speed_up": {}}})", &pointer),
             Catch::Contains("MindSpore's ascend_config keys are parallel_speed_up_json_path"));
  CHECK_THAT(ErrorOf(head + R"("ascend_config": {"parallel_speed_up_json_path": "missing.json"}})", &pointer),
             Catch::Contains("does not exist"));
  CHECK(pointer == "/ascend_config/parallel_speed_up_json_path");
  CHECK_THAT(ErrorOf(head + R"("ascend_config": {"parallel_speed_up_json": {"pp_1f1b_overlap": "AlltoAll"}},
                       "simulation": {"overlap_forward_backward": ["expert"]}})",
                     &pointer),
             Catch::Contains("give one of the two"));
  CHECK(pointer == "/ascend_config");
  // The overlap's rules name the key that asked for it.
  CHECK_THAT(ErrorOf(head + R"("ascend_config": {"parallel_speed_up_json": {"pp_1f1b_overlap": "AlltoAll"}},
                       "simulation": {"pipeline_schedule": "gpipe"}})",
                     &pointer),
             Catch::Contains("pp_1f1b_overlap pairs a forward with a backward") && Catch::Contains("gpipe"));
  CHECK(pointer == "/ascend_config");
}

TEST_CASE("a run cannot use more devices than its cluster has") {
  std::string pointer;
  const std::string cluster = R"({"name": "one-server", "servers": 1, "devices_per_server": 8,
    "device": {"kind": "gpu", "model": "G", "peak_flops": {"float16": "100 TFLOP/s"}, "memory": "16 GB",
               "memory_bandwidth": "1 TB/s"},
    "host": {"cpu_flops": "1 TFLOP/s", "memory": "64 GB", "memory_bandwidth": "50 GB/s", "pcie_bandwidth": "16 GB/s",
             "pcie_latency": "2 us"},
    "intra_server": {"kind": "nvswitch", "link_bandwidth": "300 GB/s", "latency": "2 us"},
    "inter_server": {"nic_bandwidth": "200 Gb/s", "topology": "fat_tree", "link_latency": "1 us",
                     "switch_latency": "1 us"}})";
  CHECK_THAT(ErrorOf(R"({"name": "r", "cluster": )" + cluster + R"(, "model": "../models/resnet50.json",
      "parallel": {"parallel_mode": "data_parallel", "device_num": 16, "global_batch_size": 32}})",
                     &pointer),
             Catch::Contains("cluster \"one-server\" has 8 devices, device_num asks for 16"));
  CHECK(pointer == "/parallel/device_num");
}

TEST_CASE("errors inside a referenced file name that file") {
  const auto dir = std::filesystem::temp_directory_path() / "shardlab-run-test";
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "bad-cluster.json") << R"({"name": "c", "servers": 0})"; }
  Doc doc(R"({"name": "r", "cluster": "bad-cluster.json", "model": "x.json", "parallel": {"global_batch_size": 1}})",
          (dir / "run.json").string());
  const ConfigError e = ExpectConfigError([&] { ReadRunSpec(doc.root()); });
  CHECK(e.file() == (dir / "bad-cluster.json").string());
  CHECK(e.pointer() == "/servers");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a run written as JSON reads back to the same run") {
  const RunSpec run = LoadRunFile(SourcePath("configs/runs/bert-large-a100-8.json"));
  const nlohmann::json j = ToJson(run);
  const RunSpec back = ReadRunSpec(JsonNode(j, ""));
  CHECK(back.cluster == run.cluster);
  CHECK(back.parallel == run.parallel);
  CHECK(back.simulation == run.simulation);
  CHECK(back.model.params.values() == run.model.params.values());
  // overlap_forward_backward: every dimension is written as true, some as their list.
  for (const std::vector<CommDimension>& overlapped :
       {std::vector<CommDimension>{CommDimension::kTensor, CommDimension::kExpert},
        std::vector<CommDimension>{CommDimension::kTensor, CommDimension::kData, CommDimension::kPipeline,
                                   CommDimension::kExpert, CommDimension::kContext, CommDimension::kSequence}}) {
    RunSpec overlapping = run;
    overlapping.simulation.overlap_forward_backward = overlapped;
    const nlohmann::json written = ToJson(overlapping);
    CHECK(written["simulation"]["overlap_forward_backward"].is_boolean() == (overlapped.size() == 6));
    CHECK(ReadRunSpec(JsonNode(written, "")).simulation == overlapping.simulation);
  }
  RunSpec selective = run;
  selective.parallel.recompute_modules = {RecomputeModule::kMlaUpProjection, RecomputeModule::kLayerNorm};
  CHECK(ReadRunSpec(JsonNode(ToJson(selective), "")).parallel == selective.parallel);
}

}  // namespace
}  // namespace shardlab
