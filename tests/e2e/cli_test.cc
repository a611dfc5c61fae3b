// End-to-end runs of the `shardlab` binary: exit codes, one-line errors,
// output files, and every shipped run.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/e2e/cli_runner.h"

namespace {

namespace fs = std::filesystem;
using shardlab::testing::CliResult;
using shardlab::testing::Run;
using shardlab::testing::ScratchDir;
using shardlab::testing::Slurp;

int Lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

TEST_CASE("the version names SimGrid and every command the top-level help lists answers --help") {
  CliResult r = Run("--version");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::StartsWith("shardlab 0.1.0 (SimGrid 3."));
  r = Run("--help");
  REQUIRE(r.rc == 0);
  // The commands are the lines of the "Subcommands:" section.
  std::vector<std::string> commands;
  std::istringstream lines(r.out.substr(r.out.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string command;
    if (words >> command) commands.push_back(command);
  }
  CHECK(commands.size() >= 15);
  for (const std::string& command : commands) {
    INFO(command);
    r = Run(command + " --help");
    CHECK(r.rc == 0);
    CHECK_THAT(r.out, Catch::Contains("Usage:") && Catch::Contains(command));
  }
}

TEST_CASE("only SimGrid work loads the SimGrid engine module") {
  const std::string without = "env SHARDLAB_SIMGRID_MODULE=/nonexistent/libshardlab_simgrid.so";
  CHECK(Run("--version", without).rc == 0);
  CHECK(Run("simulate configs/runs/bert-large-a100-8.json --engine analytical", without).rc == 0);
  CliResult r = Run("simulate configs/runs/bert-large-a100-8.json --engine simgrid", without);
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot load the SimGrid engine libshardlab_simgrid.so: tried "
                                    "/nonexistent/libshardlab_simgrid.so (absent)"));
  r = Run("collective --cluster configs/clusters/dgx-h100-ndr.json --op allreduce --ranks 8 --bytes 1MiB", without);
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot load the SimGrid engine"));
  CHECK(Run("simulate configs/runs/bert-large-a100-8.json --engine simgrid").rc == 0);
}

TEST_CASE("usage errors exit 2") {
  CHECK(Run("").rc == 2);
  CHECK(Run("simulate").rc == 2);
  CHECK(Run("frobnicate").rc == 2);
  CHECK(Run("graph configs/models/gpt3-175b.json --pipeline-stages 0").rc == 2);
  CHECK(Run("--log-level loud models").rc == 2);
}

TEST_CASE("every shipped run simulates and prints its summary", "[slow]") {
  for (const auto& entry : fs::directory_iterator(fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs")) {
    const std::string name = entry.path().stem().string();
    INFO(name);
    const CliResult r = Run("simulate configs/runs/" + name + ".json");
    CHECK(r.rc == 0);
    // Nothing on stderr but, past 4096 devices, the one warning that MindSpore would refuse the run.
    std::string err = r.err;
    const std::string limit = "is past MindSpore's limit of 4096; shardlab simulates it as if MindSpore accepted it\n";
    if (const size_t at = err.find(limit); at != std::string::npos) {
      const size_t line = err.rfind('\n', at) == std::string::npos ? 0 : err.rfind('\n', at) + 1;
      err.erase(line, at + limit.size() - line);
    }
    CHECK(err.empty());
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
  CHECK(j["result"]["simulated_devices"] == 1);  // the 8 devices of one server fold onto one
  CHECK(j["result"]["wall_seconds"].get<double>() > 0);
  // The same document on stdout, but for the engine's run time.
  const CliResult json = Run("simulate configs/runs/resnet50-ascend-8.json --json");
  auto printed = nlohmann::json::parse(json.out);
  printed["result"]["wall_seconds"] = j["result"]["wall_seconds"];
  CHECK(printed == j);
}

TEST_CASE("dualpipe steps alike with symmetric devices folded and with every device simulated") {
  const std::string run =
      "simulate configs/runs/llama2-70b-h100-1024.json --set simulation.pipeline_schedule=dualpipe "
      "--set parallel.micro_batch_num=8 --engine simgrid --json --symmetry ";
  const CliResult folded = Run(run + "fold");
  const CliResult every = Run(run + "off");
  REQUIRE(folded.rc == 0);
  REQUIRE(every.rc == 0);
  const auto f = nlohmann::json::parse(folded.out), e = nlohmann::json::parse(every.out);
  CHECK(f["result"]["simulated_devices"].get<int64_t>() < e["result"]["simulated_devices"].get<int64_t>());
  CHECK(e["result"]["simulated_devices"] == 1024);
  // Both directions' transfers and each stage's gradient exchange with its mirror land alike.
  CHECK(f["result"]["step_seconds"].get<double>() == Approx(e["result"]["step_seconds"].get<double>()).epsilon(0.005));
  for (int s = 0; s < 4; ++s)
    CHECK(f["result"]["stages"][s]["end_seconds"].get<double>() ==
          Approx(e["result"]["stages"][s]["end_seconds"].get<double>()).epsilon(0.005));
}

TEST_CASE("blocking pipeline sends hold their stage alike on both engines") {
  // LLaMA-2 70B's 4 stages, interleaved over 2 chunks, under the megatron
  // preset, its sends overlapped or not: waiting for each send lengthens the
  // step (a stage with another chunk's pass ready waits), by the same on
  // both engines. (Under 1F1B the next pass mostly waits for its input anyway.)
  const std::string run =
      "simulate configs/runs/llama2-70b-h100-1024-interleaved.json --set stack.preset=megatron --json --set "
      "stack.overlap_pipeline_sends=";
  std::map<std::string, double> step;
  for (const char* overlap : {"true", "false"})
    for (const char* engine : {"analytical", "simgrid"}) {
      const CliResult r = Run(run + overlap + " --engine " + engine);
      REQUIRE(r.rc == 0);
      const auto j = nlohmann::json::parse(r.out);
      CHECK(j["run"]["stack"]["overlap_pipeline_sends"] == (std::string(overlap) == "true"));
      step[std::string(overlap) + engine] = j["result"]["step_seconds"].get<double>();
    }
  CHECK(step["falseanalytical"] > step["trueanalytical"] * 1.001);
  CHECK(step["falsesimgrid"] > step["truesimgrid"] * 1.001);
  CHECK(step["falsesimgrid"] == Approx(step["falseanalytical"]).epsilon(0.005));
  CHECK(step["falsesimgrid"] - step["truesimgrid"] ==
        Approx(step["falseanalytical"] - step["trueanalytical"]).epsilon(0.1));
  // DualPipe's overlapped units send both ways at a unit's end: held for both, alike on both engines.
  const std::string dual =
      "simulate configs/runs/llama2-70b-h100-1024.json --set stack.preset=megatron --set "
      "simulation.pipeline_schedule=dualpipe --set simulation.virtual_pipeline_chunks=2 --set "
      "'simulation.overlap_forward_backward=[\"tensor\"]' --json --set stack.overlap_pipeline_sends=";
  for (const char* overlap : {"true", "false"})
    for (const char* engine : {"analytical", "simgrid"}) {
      const CliResult r = Run(dual + overlap + " --engine " + engine);
      REQUIRE(r.rc == 0);
      step[std::string("dual") + overlap + engine] =
          nlohmann::json::parse(r.out)["result"]["step_seconds"].get<double>();
    }
  CHECK(step["dualfalseanalytical"] > step["dualtrueanalytical"]);
  CHECK(step["dualfalsesimgrid"] > step["dualtruesimgrid"]);
  CHECK(step["dualfalsesimgrid"] == Approx(step["dualfalseanalytical"]).epsilon(0.005));
}

TEST_CASE("each chunk's gradient buckets reduce after its own passes alike on both engines") {
  // LLaMA-2 70B interleaved over 2 chunks with Megatron's overlapped
  // gradient reduction (buckets of 40M elements, each chunk's after its own
  // last backward), then with MindSpore's sharded accumulation (every
  // micro-batch's ReduceScatters after each chunk's pass): both engines
  // agree, and the buckets overlap passes still to come.
  const std::string run =
      "simulate configs/runs/llama2-70b-h100-1024-interleaved.json --json --set stack.preset=megatron --set "
      "stack.overlap_grad_reduce=true";
  for (const char* shard : {"false", "true"}) {
    INFO("gradient_accumulation_shard " << shard);
    const std::string variant = run + " --set parallel.parallel_optimizer_config.gradient_accumulation_shard=" + shard;
    const CliResult a = Run(variant + " --engine analytical"), s = Run(variant + " --engine simgrid");
    REQUIRE(a.rc == 0);
    REQUIRE(s.rc == 0);
    const auto ja = nlohmann::json::parse(a.out), js = nlohmann::json::parse(s.out);
    CHECK(js["result"]["step_seconds"].get<double>() ==
          Approx(ja["result"]["step_seconds"].get<double>()).epsilon(0.005));
    const auto& data = ja["result"]["stages"][0]["communication_by_dimension"];
    for (const auto& d : data)
      if (d["dimension"] == "data") CHECK(d["exposed_seconds"].get<double>() < d["seconds"].get<double>());
  }
}

TEST_CASE("a gradient ready inside a step starts its bucket alike on both engines, whatever the fusion setting") {
  // GPT-3 175B on 4096 Ascend devices with MicroBatchInterleaved: each
  // tensor-parallel collective runs beside the compute after it. Buckets
  // become ready inside those steps without ending the overlap, so the
  // backward pass takes as long with one bucket per gradient as with 256 MB
  // buckets, and SimGrid starts each bucket when the analytical engine does.
  const std::string run =
      "simulate configs/runs/gpt3-175b-ascend-4096-interleaved.json --json --set "
      "'parallel.comm_fusion={\"reducescatter\":{\"mode\":\"size\",\"config\":";
  std::vector<double> backward;
  for (const char* mb : {"0", "256"}) {
    std::map<std::string, double> step;
    for (const char* engine : {"analytical", "simgrid"}) {
      const CliResult r = Run(run + mb + "}}' --engine " + engine);
      REQUIRE(r.rc == 0);
      const auto j = nlohmann::json::parse(r.out);
      backward.push_back(j["result"]["stages"][0]["backward_seconds_per_micro_batch"].get<double>());
      step[engine] = j["result"]["step_seconds"].get<double>();
    }
    INFO(mb << " MB buckets");
    CHECK(step["simgrid"] == Approx(step["analytical"]).epsilon(0.001));
  }
  for (double b : backward) CHECK(b == Approx(backward.front()).epsilon(1e-9));
}

TEST_CASE("activation offloading steps alike on both engines and is refused beside recompute") {
  const std::string run = "simulate configs/runs/llama2-70b-h100-1024.json --set parallel.cpu_offloading_num_layers=10";
  const CliResult analytical = Run(run + " --set parallel.recompute=false --engine analytical --json");
  const CliResult simgrid = Run(run + " --set parallel.recompute=false --engine simgrid --json");
  REQUIRE(analytical.rc == 0);
  REQUIRE(simgrid.rc == 0);
  const auto a = nlohmann::json::parse(analytical.out), s = nlohmann::json::parse(simgrid.out);
  const double step = s["result"]["step_seconds"].get<double>();
  CHECK(a["result"]["step_seconds"].get<double>() == Approx(step).epsilon(0.005));
  CHECK(a["run"]["parallel"]["cpu_offloading_num_layers"] == 10);
  const CliResult refused = Run(run);  // the run file recomputes
  CHECK(refused.rc == 1);
  CHECK_THAT(refused.err, Catch::Contains("/parallel/cpu_offloading_num_layers") &&
                              Catch::Contains("use one of cpu_offloading_num_layers and recompute"));
  CHECK_THAT(Run(run + " --set parallel.recompute=false --set simulation.pipeline_schedule=interleaved "
                       "--set simulation.virtual_pipeline_chunks=2")
                 .err,
             Catch::Contains("not built with the interleaved pipeline schedule"));
  CHECK_THAT(Run("simulate configs/runs/resnet50-ascend-8.json --set parallel.cpu_offloading_num_layers=1").err,
             Catch::Contains("has no repeated transformer layers to offload"));

  // Servers of 4 devices: the tensor-parallel groups of 8 cross servers, so
  // SimGrid runs every pass step by step (flows, copy waits as timers), and
  // copies at 8 GB/s outlast the compute beside them.
  const fs::path file = fs::path(SHARDLAB_SOURCE_DIR) / "configs/runs/llama2-70b-h100-1024.json";
  nlohmann::json doc = nlohmann::json::parse(Slurp(file));
  nlohmann::json cluster =
      nlohmann::json::parse(Slurp((file.parent_path() / doc.at("cluster").get<std::string>()).lexically_normal()));
  cluster["servers"] = 1024;
  cluster["devices_per_server"] = 4;
  cluster["inter_server"]["nics_per_server"] = 4;
  cluster["host"]["pcie_bandwidth"] = "8 GB/s";
  doc["cluster"] = cluster;
  doc["model"] = (file.parent_path() / doc.at("model").get<std::string>()).lexically_normal().string();
  doc["parallel"]["recompute"] = false;
  doc["parallel"]["cpu_offloading_num_layers"] = 10;
  const fs::path narrow = ScratchDir() / "offload-4-per-server.json";
  std::ofstream(narrow) << doc.dump(2);
  const CliResult slow_a = Run("simulate '" + narrow.string() + "' --engine analytical --json");
  const CliResult slow_s = Run("simulate '" + narrow.string() + "' --engine simgrid --json");
  REQUIRE(slow_a.rc == 0);
  REQUIRE(slow_s.rc == 0);
  CHECK(nlohmann::json::parse(slow_a.out)["result"]["step_seconds"].get<double>() ==
        Approx(nlohmann::json::parse(slow_s.out)["result"]["step_seconds"].get<double>()).epsilon(0.005));
}

TEST_CASE("simulate search compare and tune-fusion change run-file keys with set options") {
  const CliResult base = Run("simulate configs/runs/resnet50-ascend-8.json --engine analytical --json");
  const CliResult set =
      Run("simulate configs/runs/resnet50-ascend-8.json --engine analytical --json --set parallel.micro_batch_num=2 "
          "--set parallel.global_batch_size=512");
  REQUIRE(base.rc == 0);
  REQUIRE(set.rc == 0);
  const auto a = nlohmann::json::parse(base.out), b = nlohmann::json::parse(set.out);
  CHECK(b["run"]["parallel"]["micro_batch_num"] == 2);
  CHECK(b["run"]["parallel"]["global_batch_size"] == 512);
  CHECK(b["result"]["step_seconds"].get<double>() > a["result"]["step_seconds"].get<double>());
  // A bare word is a string; the run's own checks name the key.
  CliResult r = Run("simulate configs/runs/resnet50-ascend-8.json --set parallel.micro_batch_num=many");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("/parallel/micro_batch_num"));
  r = Run("search configs/runs/resnet50-ascend-8.json --set parallel.micro_bach_num=2");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("micro_bach_num"));
  r = Run("compare configs/runs/resnet50-ascend-8.json --set micro_batch_num");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("--set \"micro_batch_num\": expected KEY=VALUE"));
  r = Run("simulate configs/runs/resnet50-ascend-8.json --set name.first=1");
  CHECK(r.rc == 1);
  CHECK_THAT(r.err, Catch::Contains("not an object with the key"));
  // tune-fusion tunes the changed run and writes it back changed, in its author's key order.
  const fs::path tuned = ScratchDir() / "tuned-set.json";
  r =
      Run("tune-fusion configs/runs/resnet50-ascend-8.json --engine analytical --json --set parallel.micro_batch_num=2 "
          "--set parallel.global_batch_size=512 --out '" +
          tuned.string() + "'");
  REQUIRE(r.rc == 0);
  const auto written = nlohmann::ordered_json::parse(Slurp(tuned));
  CHECK(written["parallel"]["micro_batch_num"] == 2);
  CHECK(written["parallel"]["global_batch_size"] == 512);
  CHECK(written.begin().key() == "name");
  const auto rerun = nlohmann::json::parse(Run("simulate '" + tuned.string() + "' --engine analytical --json").out);
  CHECK(rerun["result"]["step_seconds"].get<double>() ==
        Approx(nlohmann::json::parse(r.out)["winner_step_seconds"].get<double>()).epsilon(1e-9));
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
  CHECK_THAT(r.err, Catch::Contains("not valid JSON"));
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
  for (const char* name : {"gpt:", "bert:", "resnet50:", "wide_deep:", "ffn:"})
    CHECK_THAT(r.out, Catch::Contains(name));
}

}  // namespace

namespace {

nlohmann::json RunJson(const std::string& args) {
  const CliResult r = Run(args);
  INFO(args << "\n" << r.err);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

TEST_CASE("layout prints a MatMul's device matrix and tensor maps") {
  const auto j = RunJson("layout --op MatMul --inputs '[[128,64],[64,32]]' --strategy '[[2,1],[1,4]]' --devices 8");
  CHECK(j["device_matrix"] == nlohmann::json::parse("[2,1,4]"));
  CHECK(j["inputs"][0]["tensor_map"] == nlohmann::json::parse("[2,1]"));
  CHECK(j["inputs"][1]["tensor_map"] == nlohmann::json::parse("[1,0]"));
  CHECK(j["outputs"][0]["tensor_map"] == nlohmann::json::parse("[2,0]"));
  CHECK(j["inputs"][0]["slice_shape"] == nlohmann::json::parse("[64,64]"));
  CHECK(j["mirror_comm"][0]["ranks"] == nlohmann::json::parse("[0,4]"));
  CHECK(j["flops"]["forward"] == 2.0 * 64 * 64 * 8);
  const auto tb = RunJson(
      "layout --op MatMul --inputs '[[32,64],[128,64]]' --strategy '[[2,2],[2,2]]' --devices 8 "
      "--attrs '{\"transpose_b\":true}' --rank 3");
  CHECK(tb["forward_comm"][0]["type"] == "AllReduce");
  CHECK(tb["forward_comm"][0]["ranks"] == nlohmann::json::parse("[1,3]"));
}

TEST_CASE("redistribute prints the unified layouts, primitives, operators and cost") {
  const auto j = RunJson(
      "redistribute --shape '[512,1024]' --from '{\"device_matrix\":[8,4],\"tensor_map\":[1,0]}' "
      "--to '{\"device_matrix\":[2,16],\"tensor_map\":[1,0]}'");
  CHECK(j["unified"]["device_matrix"] == nlohmann::json::parse("[2,4,4]"));
  CHECK(j["primitives"].size() == 2);
  CHECK(j["primitives"][0]["type"] == "PermuteByAxis");
  CHECK(j["comm_bytes_per_device"] == 2 * 3 * 16384 * 4);
  CHECK(j["cost"]["communication"].get<double>() > 0);
  const auto alltoall = RunJson(
      "redistribute --shape '[512,1024]' --from '{\"device_matrix\":[8,4],\"tensor_map\":[1,0]}' "
      "--to '{\"device_matrix\":[2,16],\"tensor_map\":[1,0]}' --enable-alltoall");
  CHECK(alltoall["ops"][1]["type"] == "AlltoAll");
}

TEST_CASE("devices lists coordinates and groups") {
  const auto j = RunJson("devices --matrix '[2,2,3]' --rank 5 --tensor-map '[-1,0]'");
  CHECK(j["coordinates"] == nlohmann::json::parse("[0,1,2]"));
  CHECK(j["groups"][0]["ranks"] == nlohmann::json::parse("[5,11]"));
  CHECK(j["groups"][2]["ranks"] == nlohmann::json::parse("[3,4,5]"));
  CHECK(j["same_slice"] == nlohmann::json::parse("[2,5,8,11]"));
  CHECK(j["rank_groups"] == nlohmann::json::parse("[[5,11],[2,5],[3,4,5]]"));
  // MindSpore's DeviceMatrix::CreateGroupList for device matrix [2,2,2], rank 5.
  CHECK(RunJson("devices --matrix '[2,2,2]' --rank 5")["rank_groups"] == nlohmann::json::parse("[[1,5],[5,7],[4,5]]"));
}

TEST_CASE("layout commands reject bad input with one line and exit 1") {
  const struct {
    const char* args;
    const char* message;
  } cases[] = {
      {"layout --op MatMul --inputs '[[100,64],[64,32]]' --strategy '[[8,1],[1,1]]'",
       "cannot be divisible by strategy value 8"},
      {"layout --op MatMul --inputs '[[128,64],[64,32]]' --strategy '[[2,1]]'", "strategy size 1 is not equal"},
      {"layout --op Matmul --inputs '[[128,64],[64,32]]' --strategy '[[2,1],[1,4]]'", "did you mean 'MatMul'"},
      {"layout --op MatMul --inputs '[[128,64],[32,32]]' --strategy '[[2,1],[1,4]]'", "reduction dimensions differ"},
      {"layout --op MatMul --inputs '[[128,64],[64,32]]' --strategy '[[2,1],[1,4' ", "--strategy: /: not valid JSON"},
      {"redistribute --shape '[512,1024]' --from '{\"device_matrix\":[8,4],\"tensor_map\":[2,0]}' "
       "--to '{\"device_matrix\":[2,16],\"tensor_map\":[1,0]}'",
       "names device dimension 2"},
      {"redistribute --shape '[512,1024]' --from '{\"device_matrix\":[8,4],\"tensor_map\":[1,0]}' "
       "--to '{\"device_matrix\":[2,16],\"tensor_map\":[1,0],\"shape\":[512,1008]}'",
       "different element counts"},
      {"redistribute --shape '[512,1024]' --from '{\"device_matrix\":[8,4],\"tensor_map\":[1,0]}' "
       "--to '{\"device_matrix\":[2,2],\"tensor_map\":[1,0]}'",
       "over 32 and 4 devices"},
      {"devices --matrix '[2,2,3]' --rank 12", "not below the 12 devices"},
      {"devices --matrix '[2,2,3]' --tensor-map '[3,0]'", "--tensor-map: /0: expected an integer in -1..2"},
      // It segfaulted (the product overflowed) and took 40 s for 60,000 ones.
      {"devices --matrix '[4096,4096,4096,4096,4096,4096]'", "--matrix: /: a device matrix holds at most 131072"},
      {"devices --matrix '[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]'", "at most 16 dimensions, this one 17"},
      // Too few inputs for the operator (it crashed once for 33 of 34 operator types).
      {"layout --op MatMul --inputs '[[128,64]]' --strategy '[[2,1]]' --devices 8", "takes 2 inputs, got 1"},
      {"layout --op Add --inputs '[[128,64]]' --strategy '[[2,1]]' --devices 8", "takes 2 inputs, got 1"},
      {"layout --op ReLU --inputs '[]' --strategy '[]' --devices 8", "takes 1 input, got 0"},
      {"layout --op MatMul --inputs '[[128,64],[64,32]]' --attrs '{\"transposee_b\":true}' --strategy "
       "'[[2,1],[1,4]]'",
       "did you mean 'transpose_b'"},
  };
  for (const auto& c : cases) {
    INFO(c.args);
    const CliResult r = Run(c.args);
    CHECK(r.rc == 1);
    CHECK(Lines(r.err) == 1);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
}

}  // namespace

namespace {

TEST_CASE("simulate writes a step result and a Chrome trace") {
  const fs::path result = ScratchDir() / "gpt-result.json", trace = ScratchDir() / "gpt-trace.json";
  const CliResult r = Run("simulate configs/runs/pangu-alpha-13b-ascend-512.json --out '" + result.string() +
                          "' --trace '" + trace.string() + "' --engine analytical");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("step time"));
  CHECK_THAT(r.out, Catch::Contains("MFU"));
  const auto j = nlohmann::json::parse(Slurp(result));
  CHECK(j["result"]["engine"] == "analytical");
  CHECK(j["result"]["step_seconds"].get<double>() > 0);
  CHECK(j["result"]["stages"].size() == 2);
  CHECK(j["result"]["bubble_fraction"].get<double>() > 0);
  const auto t = nlohmann::json::parse(Slurp(trace));
  int forwards = 0;
  for (const auto& e : t["traceEvents"]) forwards += e["ph"] == "X" && e["cat"] == "forward";
  CHECK(forwards == 2 * 8);  // 2 stages x 8 micro-batches
}

TEST_CASE("a run that does not fit in memory ends with a clear message") {
  const fs::path bad = ScratchDir() / "oom-run.json";
  std::ofstream(bad) << R"({"name": "oom", "cluster": ")" << SHARDLAB_SOURCE_DIR
                     << R"(/configs/clusters/ascend910-atlas900.json", "model": ")" << SHARDLAB_SOURCE_DIR
                     << R"(/configs/models/gpt3-175b.json", "parallel": {"parallel_mode": "semi_auto_parallel",
                        "device_num": 8, "global_batch_size": 8}})";
  const CliResult r = Run("simulate '" + bad.string() + "'");
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Catch::Contains("OUT OF MEMORY"));
  CHECK_THAT(r.err, Catch::Contains("out of memory: stage 0 needs"));
}

}  // namespace

namespace {

TEST_CASE("collective prints an nccl-tests table next to the closed form") {
  const CliResult r =
      Run("collective --op allreduce --bytes 1MiB..4MiB --ranks 16 --stride 8 "
          "--cluster configs/clusters/dgx-h100-ndr.json --algo ring");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("out-of-place") && Catch::Contains("in-place") && Catch::Contains("#wrong") &&
                        Catch::Contains("(elements)") && Catch::Contains("16 servers, 1 per server"));
  CHECK(Lines(r.out) == 6 + 3 + 2);  // six header lines, 1, 2 and 4 MiB, two closing lines
  CHECK(r.err.empty());              // piped: no progress line
  const CliResult shown = Run(
      "collective --op allreduce --bytes 1MiB..4MiB --ranks 16 --stride 8 --cluster configs/clusters/dgx-h100-ndr.json",
      "SHARDLAB_PROGRESS=always");
  REQUIRE(shown.rc == 0);
  CHECK_THAT(shown.err, Catch::Contains("simulating 3 sizes on SimGrid ["));
  // size, count (4-byte floats), type, redop, root, then time, algbw, busbw, #wrong twice.
  std::vector<std::string> row;
  {
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("     4194304 ", 0) == 0) {
        std::istringstream words(line);
        for (std::string w; words >> w;) row.push_back(w);
      }
  }
  REQUIRE(row.size() >= 13);
  CHECK(row[0] == "4194304");
  CHECK(row[1] == "1048576");
  CHECK(row[2] == "float");
  CHECK(row[3] == "sum");
  CHECK(row[4] == "-1");
  CHECK(row[5] == row[9]);  // in place: the same flows
  CHECK(row[8] == "N/A");
  CHECK(std::stod(row[7]) == Approx(std::stod(row[6]) * 2 * 15 / 16).epsilon(0.01));  // busbw = algbw 2(n-1)/n
  CHECK_THAT(r.out, Catch::Contains("# Avg bus bandwidth    : "));
  const CliResult gather =
      Run("collective --op allgather --bytes 1MiB --ranks 8 --cluster configs/clusters/dgx-h100-ndr.json");
  REQUIRE(gather.rc == 0);
  CHECK_THAT(gather.out, Catch::Contains("1048576         32768     float    none"));  // one rank's part
  CHECK_THAT(gather.out, Catch::Contains("1 server, 8 per server"));
  const CliResult bad =
      Run("collective --op allreduce --bytes 1XB --ranks 16 --cluster configs/clusters/dgx-h100-ndr.json");
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.err, Catch::Contains("--bytes: \"1XB\" is not a size"));
  const CliResult too_many = Run("collective --ranks 4096 --stride 2 --cluster configs/clusters/dgx-h100-ndr.json");
  CHECK(too_many.rc == 1);
  CHECK_THAT(too_many.err, Catch::Contains("has 4096 devices"));
}

TEST_CASE("calibrate --check-profile prints the H100 profile's errors per kernel family") {
  const std::string check =
      "calibrate --check-profile --cluster configs/clusters/dgx-h100-ndr.json "
      "configs/calibration/measured/h100-sxm5-kernels.json";
  const CliResult r = Run(check);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("(NVIDIA H100 80GB HBM3) against dgx-h100-ndr's H100-SXM5-80GB profile"));
  CHECK_THAT(r.out, Catch::Contains("GEMM bfloat16"));
  CHECK_THAT(r.out, Catch::Contains("attention (cudnn_attention)"));
  const CliResult j = Run(check + " --json");
  REQUIRE(j.rc == 0);
  const nlohmann::json out = nlohmann::json::parse(j.out);
  const nlohmann::json& file = out["files"][0];
  CHECK(file["measured_device"] == "NVIDIA H100 80GB HBM3");
  size_t gemms = 0;
  for (const auto& s : file["samples"]) gemms += s["family"] == "GEMM bfloat16";
  for (const auto& f : file["families"])
    if (f["family"] == "GEMM bfloat16") CHECK(f["samples"] == gemms);
  // Fitting needs --out; checking needs --cluster and refuses --out.
  const CliResult no_out = Run("calibrate configs/calibration/measured/localhost-cpu-gemm-2ranks.json");
  CHECK(no_out.rc == 2);
  CHECK_THAT(no_out.err, Catch::Contains("--out is required"));
  CHECK(Run("calibrate --check-profile configs/calibration/measured/h100-sxm5-kernels.json").rc == 2);
  const CliResult not_kernels =
      Run("calibrate --check-profile --cluster configs/clusters/dgx-h100-ndr.json "
          "configs/calibration/measured/localhost-cpu-gemm-2ranks.json");
  CHECK(not_kernels.rc == 1);
  CHECK_THAT(not_kernels.err, Catch::Contains("bench/gpu/kernels.py"));
}

TEST_CASE("validate prints predicted against published with the median error") {
  const CliResult r = Run("validate configs/validation");
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("megatron-gpt-1t"));
  CHECK_THAT(r.out, Catch::Contains("nccl-allreduce-dgx-a100-8"));
  CHECK_THAT(r.out, Catch::Contains("nccl-tests-allreduce-dgx-h100-8@1 GiB"));  // a sweep prints one row per size
  CHECK_THAT(r.out, Catch::Contains("# median absolute error"));
  CHECK_THAT(r.out, Catch::Contains("Megatron-LM SC'21 (Narayanan et al.)"));  // medians per source
  const CliResult md = Run("validate configs/validation --markdown");
  REQUIRE(md.rc == 0);
  CHECK_THAT(md.out, Catch::StartsWith("| Source | Figures | Median abs. error"));
  CHECK(Run("validate configs/no-such-folder").rc == 1);
  // Piped, no progress; where progress is asked for, one line per redraw, cleared at the end.
  CHECK(r.err.find("validating") == std::string::npos);
  const CliResult shown = Run("validate configs/validation --markdown", "SHARDLAB_PROGRESS=always");
  REQUIRE(shown.rc == 0);
  CHECK_THAT(shown.err, Catch::Contains("validating with analytical [########################] "));
  CHECK_THAT(shown.err, Catch::EndsWith("\r\033[K"));
  CHECK(shown.out == md.out);
  // The cases past 4096 devices warn while the line is drawn: each warning starts a line of its own.
  const std::string warning = "shardlab: warning: ";
  int interrupting = 0;  // warnings that cleared a drawn line
  for (size_t at = shown.err.find(warning); at != std::string::npos; at = shown.err.find(warning, at + 1)) {
    INFO(shown.err.substr(at < 80 ? 0 : at - 80, 100));
    const bool cleared = at >= 4 && shown.err.compare(at - 4, 4, "\r\033[K") == 0;
    CHECK((at == 0 || shown.err[at - 1] == '\n' || cleared));
    interrupting += cleared;
  }
  CHECK(interrupting > 0);
}

TEST_CASE("a long simulate draws its progress on a terminal and nothing when piped") {
  if (!shardlab::testing::OnPath("script")) {
    WARN("no script(1) to give the command a terminal: not checked");
    return;
  }
  // SimGrid with every device (about 2 s): progress is drawn after half a second.
  const std::string args = "simulate configs/runs/gpt3-175b-ascend-4096.json --engine simgrid --symmetry off";
  const fs::path typescript = ScratchDir() / "typescript";
  const std::string command =
      "script -qfec \"'" + std::string(SHARDLAB_BINARY) + "' " + args + "\" '" + typescript.string() + "' > /dev/null";
  REQUIRE(std::system(("cd '" + std::string(SHARDLAB_SOURCE_DIR) + "' && " + command).c_str()) == 0);
  const std::string terminal = Slurp(typescript);
  CHECK_THAT(terminal, Catch::Contains("simulating on SimGrid [") && Catch::Contains("ETA"));
  CHECK_THAT(terminal, Catch::Contains("step time"));
  const CliResult piped = Run(args);
  REQUIRE(piped.rc == 0);
  CHECK(piped.err.find("simulating on SimGrid") == std::string::npos);
  CHECK(piped.err.find('\r') == std::string::npos);
  // The model line lists what the model sets, not defaults such as "ffn_hidden=0" (derived).
  CHECK_THAT(piped.out, Catch::Contains("layers=96 hidden=12288 heads=96") &&
                            Catch::Contains("at their defaults: shardlab models)"));
  CHECK(piped.out.find("ffn_hidden=0") == std::string::npos);
}

TEST_CASE("docs/validation.md is validate's Markdown output verbatim") {
  const std::string doc = Slurp(fs::path(SHARDLAB_SOURCE_DIR) / "docs/validation.md");
  const std::string marker = "<!-- generated by: shardlab validate configs/validation --markdown -->\n";
  const size_t at = doc.find(marker);
  REQUIRE(at != std::string::npos);
  const CliResult r = Run("validate configs/validation --markdown");
  REQUIRE(r.rc == 0);
  INFO("run scripts/refresh-validation-doc.sh and review the diff");
  CHECK(doc.substr(at + marker.size()) == r.out);
}

TEST_CASE("validate with SimGrid children prints its header once into a file and lists the runs it declines") {
  // Output to a file is fully buffered: a child forked with the header still
  // in the buffer would print it again.
  const fs::path folder = ScratchDir() / "validate-simgrid";
  fs::create_directories(folder);
  for (const char* name : {"megatron-gpt-1.7b", "nccl-allreduce-dgx-a100-8"}) {
    nlohmann::json doc = nlohmann::json::parse(
        Slurp(fs::path(SHARDLAB_SOURCE_DIR) / "configs/validation" / (std::string(name) + ".json")));
    auto absolute = [](nlohmann::json& node, const char* key) {
      if (node.contains(key) && node[key].is_string())
        node[key] = (fs::path(SHARDLAB_SOURCE_DIR) / "configs/validation" / node[key].get<std::string>())
                        .lexically_normal()
                        .string();
    };
    if (doc.contains("run")) {
      absolute(doc["run"], "cluster");
      absolute(doc["run"], "model");
    } else {
      absolute(doc["collective"], "cluster");
    }
    std::ofstream(folder / (std::string(name) + ".json")) << doc.dump(2);
    if (!doc.contains("run")) continue;
    // The same run with 4096 micro-batches: more tasks than SimGrid takes.
    doc["name"] = "many-micro-batches";
    doc["run"]["parallel"]["micro_batch_num"] = 4096;
    doc["run"]["parallel"]["global_batch_size"] = 4096 * 32;
    std::ofstream(folder / "many-micro-batches.json") << doc.dump(2);
  }
  const CliResult r = Run("validate '" + folder.string() + "' --engine simgrid");
  REQUIRE(r.rc == 0);
  size_t headers = 0;
  for (size_t at = r.out.find("# 3 cases"); at != std::string::npos; at = r.out.find("# 3 cases", at + 1)) ++headers;
  CHECK(headers == 1);
  CHECK_THAT(r.out, Catch::Contains("megatron-gpt-1.7b") && Catch::Contains("nccl-allreduce-dgx-a100-8"));
  CHECK_THAT(r.out, Catch::Contains("# median absolute error"));
  // A run SimGrid declines for its size is listed apart, not counted, and the others still run.
  CHECK_THAT(r.out, Catch::Contains("# not simulated by simgrid: many-micro-batches: this step would run"));
  CHECK_THAT(r.err, Catch::Contains("many-micro-batches.json: not simulated"));
  const CliResult j = Run("validate '" + folder.string() + "' --engine simgrid --json");
  REQUIRE(j.rc == 0);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  CHECK(doc["cases"].size() == 2);
  REQUIRE(doc["not_simulated"].size() == 1);
  CHECK(doc["not_simulated"][0]["name"] == "many-micro-batches");
  CHECK(doc["all"]["cases"] == 2);
}

TEST_CASE("an oversubscribed spine slows what crosses pods in flows and in closed form alike") {
  // 16 servers on a 3-level tree of radix-8 switches: one server per leaf,
  // four leaves per pod, four pods; an AlltoAll sends across every pod.
  auto seconds = [](double spine, double* closed) {
    nlohmann::json c =
        nlohmann::json::parse(Slurp(fs::path(SHARDLAB_SOURCE_DIR) / "configs/clusters/ascend910-atlas900.json"));
    c["servers"] = 16;
    c["inter_server"].update({{"levels", 3},
                              {"switch_radix", 8},
                              {"rail_optimized", false},
                              {"oversubscription", 1},
                              {"spine_oversubscription", spine}});
    const auto path = ScratchDir() / ("spine-" + std::to_string(static_cast<int>(spine)) + ".json");
    std::ofstream(path) << c.dump();
    const CliResult r = Run("collective --op alltoall --bytes 256MiB --ranks 128 --cluster '" + path.string() + "'");
    REQUIRE(r.rc == 0);
    std::istringstream lines(r.out);
    std::vector<std::string> row;
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("   268435456 ", 0) == 0) {
        std::istringstream words(line);
        for (std::string w; words >> w;) row.push_back(w);
      }
    REQUIRE(row.size() == 17);
    *closed = std::stod(row[15]);
    return std::stod(row[5]);
  };
  double closed1 = 0, closed4 = 0;
  const double full = seconds(1, &closed1), thin = seconds(4, &closed4);
  CHECK(thin > 3.5 * full);
  CHECK(closed4 > 3.5 * closed1);
  // Two levels have no spine to oversubscribe.
  nlohmann::json c =
      nlohmann::json::parse(Slurp(fs::path(SHARDLAB_SOURCE_DIR) / "configs/clusters/ascend910-atlas900.json"));
  c["inter_server"]["spine_oversubscription"] = 2;
  const auto path = ScratchDir() / "spine-two-levels.json";
  std::ofstream(path) << c.dump();
  const CliResult bad = Run("collective --op allreduce --bytes 1MiB --ranks 8 --cluster '" + path.string() + "'");
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.err, Catch::Contains("/inter_server/spine_oversubscription") &&
                          Catch::Contains("a spine tier exists only in a 3-level fat tree"));
}

TEST_CASE("collective takes --bytes as plain bytes too") {
  const CliResult r =
      Run("collective --op allreduce --bytes 1344904432 --ranks 8 --cluster configs/clusters/dgx-a100-hdr.json");
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("1.253 GiB") || Catch::Contains("1344904432"));
}

}  // namespace

namespace {

TEST_CASE("traces hold every device of small runs or the ranks asked for") {
  const fs::path trace = ScratchDir() / "resnet-trace.json";
  CliResult r = Run("simulate configs/runs/resnet50-ascend-8.json --trace '" + trace.string() + "'");
  REQUIRE(r.rc == 0);
  std::set<std::string> threads;
  const auto small = nlohmann::json::parse(Slurp(trace));
  for (const auto& e : small["traceEvents"])
    if (e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
  // The 8 devices share their blocking AllReduce inside one server: one lane of ranks 0-7.
  CHECK(threads.count("ranks 0-7 compute") == 1);
  const fs::path chosen = ScratchDir() / "pangu-trace.json";
  r = Run("simulate configs/runs/pangu-alpha-13b-ascend-512.json --trace '" + chosen.string() +
          "' --trace-ranks 0,300");
  REQUIRE(r.rc == 0);
  std::set<int> stages;
  const auto picked = nlohmann::json::parse(Slurp(chosen));
  for (const auto& e : picked["traceEvents"])
    if (e["ph"] == "X") stages.insert(e["pid"].get<int>());
  CHECK(stages == std::set<int>{0, 1});
  CHECK(Run("simulate configs/runs/resnet50-ascend-8.json --trace-ranks 9 --trace '" + chosen.string() + "'").rc == 1);
}

}  // namespace
