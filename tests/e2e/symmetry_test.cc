// SimGrid's symmetry folding (sim/step_symmetry.h) against every device
// simulated: the same step, within 0.5%, on runs of up to 1024 devices over
// every fabric shardlab ships, and on an oversubscribed fabric whose hot
// links the fold must keep; and the work limit that counts simulated devices.
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

const fs::path kConfigs = fs::path(SHARDLAB_SOURCE_DIR) / "configs";

// A shipped run with its cluster and model read in place, `changes` merged over it.
fs::path Variant(const std::string& base, const std::string& name, const json& changes) {
  const fs::path file = kConfigs / "runs" / (base + ".json");
  json doc = json::parse(Slurp(file));
  for (const char* key : {"cluster", "model"})
    doc[key] = json::parse(Slurp((file.parent_path() / doc.at(key).get<std::string>()).lexically_normal()));
  doc["name"] = name;
  doc.merge_patch(changes);
  const fs::path path = ScratchDir() / "symmetry" / (name + ".json");
  fs::create_directories(path.parent_path());
  std::ofstream(path) << doc.dump(2) << "\n";
  return path;
}

struct Step {
  double seconds = 0;
  std::string devices;  // what the engine simulated
  json link_usage;      // per class of links: how busy over the step
};

double Mean(const json& usage) { return usage.at("mean_utilisation").get<double>(); }

// A class of links by name; idle when the step left it out.
json Usage(const Step& s, const std::string& name) {
  for (const json& u : s.link_usage)
    if (u.at("name") == name) return u;
  return {{"mean_utilisation", 0.0}, {"peak_utilisation", 0.0}};
}

// The folded run's link classes are the per-device run's, equally busy on average and at their busiest link.
void CheckSameLinkUsage(const Step& folded, const Step& every) {
  REQUIRE(folded.link_usage.size() == every.link_usage.size());
  for (size_t c = 0; c < folded.link_usage.size(); ++c) {
    const json &f = folded.link_usage[c], &e = every.link_usage[c];
    INFO(f.at("name").get<std::string>());
    CHECK(f.at("name") == e.at("name"));
    CHECK(f.at("links") == e.at("links"));
    CHECK(f.at("bandwidth").get<double>() == Approx(e.at("bandwidth").get<double>()).epsilon(1e-9));
    CHECK(Mean(f) == Approx(Mean(e)).epsilon(0.01).margin(1e-4));
    CHECK(f.at("busiest_utilisation").get<double>() ==
          Approx(e.at("busiest_utilisation").get<double>()).epsilon(0.01).margin(1e-4));
  }
}

Step Simulate(const fs::path& run, const std::string& symmetry) {
  const CliResult r = Run("simulate '" + run.string() + "' --engine simgrid --json --symmetry " + symmetry);
  INFO(run.filename().string() << " --symmetry " << symmetry << " exited " << r.rc << ": " << r.err);
  REQUIRE(r.rc == 0);
  const json result = json::parse(r.out).at("result");
  return {result.at("step_seconds").get<double>(), result.value("engine_detail", ""),
          result.value("link_usage", json::array())};
}

TEST_CASE("folding symmetric devices keeps the step of runs up to 1024 devices within 0.5 percent") {
  const std::vector<fs::path> runs = {
      kConfigs / "runs/bert-large-ascend-512.json",
      kConfigs / "runs/pangu-alpha-13b-ascend-512.json",
      kConfigs / "runs/bert-large-a100-8.json",
      kConfigs / "runs/wide-deep-host-ascend-8.json",
      // Tensor parallel in a server, 16 stages, data parallel over servers: HCCS
      // meshes and a two-level tree; NVSwitch and a rail-optimised three-level
      // tree whose small AllReduces run as double binary trees.
      Variant(
          "gpt3-175b-ascend-4096", "gpt3-ascend-1024",
          {{"model_params", {{"data_parallel", 8}}}, {"parallel", {{"device_num", 1024}, {"global_batch_size", 512}}}}),
      Variant(
          "gpt3-175b-h100-4096", "gpt3-h100-1024",
          {{"model_params", {{"data_parallel", 8}}}, {"parallel", {{"device_num", 1024}, {"global_batch_size", 512}}}}),
      // Megatron's gradient buckets during the backward and parameter gathers
      // beside the first forward.
      Variant("llama2-70b-h100-1024", "llama2-70b-megatron-overlap",
              {{"stack", {{"preset", "megatron"}, {"overlap_grad_reduce", true}, {"overlap_param_gather", true}}}}),
      // Megatron's tp-pp-dp rank order: a stage's servers interleave with the
      // other stages' (tensor parallel 8), or every server holds a pair of
      // each stage (tensor parallel 2) and the servers rotate together.
      Variant("llama2-70b-h100-1024", "llama2-70b-tp-pp-dp",
              {{"stack", {{"preset", "megatron"}, {"rank_order", "tp-pp-dp"}}}}),
      Variant("llama2-70b-h100-1024", "llama2-70b-tp2-pp-dp",
              {{"stack", {{"preset", "megatron"}, {"rank_order", "tp-pp-dp"}}},
               {"model_params", {{"model_parallel", 2}, {"data_parallel", 128}}},
               {"parallel", {{"micro_batch_num", 8}}}}),
  };
  for (const fs::path& run : runs) {
    INFO(run.filename().string());
    const Step folded = Simulate(run, "fold");
    const Step every = Simulate(run, "off");
    INFO(folded.devices);
    CHECK(folded.devices.find("devices simulated") != std::string::npos);
    // Where every server holds a pair of each stage, the servers rotate together.
    if (run.filename() == "llama2-70b-tp2-pp-dp.json")
      CHECK(folded.devices.find("servers rotate by") != std::string::npos);
    CHECK(every.devices.find("symmetry is off") != std::string::npos);
    CHECK(folded.seconds == Approx(every.seconds).epsilon(0.005));
    CHECK(!folded.link_usage.empty());
    // Wide&Deep's fold (slots rotating in blocks of 4 on HCCS) is a symmetry
    // of the platform but not of its 8-device rings, which run in closed form
    // in one lane: their hops between the blocks still count on the
    // cross-group links.
    CheckSameLinkUsage(folded, every);
  }
}

TEST_CASE("an oversubscribed fabric's hot links slow the folded step as they slow every device's") {
  // One server per leaf switch of a three-level tree: every pipeline transfer
  // and data-parallel flow crosses the leaves' uplinks, 4:1 oversubscribed.
  auto run = [](const std::string& name, double oversubscription) {
    return Variant("gpt3-175b-h100-4096", name,
                   {{"cluster",
                     {{"servers", 128},
                      {"inter_server",
                       {{"rail_optimized", false}, {"switch_radix", 16}, {"oversubscription", oversubscription}}}}},
                    {"model_params", {{"data_parallel", 4}, {"layers", 32}}},
                    {"parallel", {{"device_num", 512}, {"global_batch_size", 256}}}});
  };
  const fs::path hot = run("gpt3-h100-512-oversubscribed", 4);
  const Step folded = Simulate(hot, "fold");
  const Step every = Simulate(hot, "off");
  INFO(folded.devices);
  CHECK(folded.devices.find("devices simulated") != std::string::npos);
  CHECK(folded.seconds == Approx(every.seconds).epsilon(0.005));
  const Step full_bisection = Simulate(run("gpt3-h100-512-full-bisection", 1), "fold");
  CHECK(folded.seconds > 1.05 * full_bisection.seconds);
  // The link usage shows the hot tier, folded or not: at 4:1 the leaf uplinks are the busiest
  // class for their capacity, busier than at full bisection, and saturated at their peak.
  CheckSameLinkUsage(folded, every);
  const json leaf = Usage(folded, "leaf uplinks");
  CHECK(Mean(leaf) > Mean(Usage(full_bisection, "leaf uplinks")));
  for (const json& u : folded.link_usage) CHECK(Mean(leaf) >= Mean(u));
  CHECK(leaf.at("peak_utilisation").get<double>() > 0.95);
  // The spine tier's pod uplinks, 4:1 (eight leaves per pod): the fold keeps them too.
  const fs::path spine =
      Variant("gpt3-175b-h100-4096", "gpt3-h100-512-spine-oversubscribed",
              {{"cluster",
                {{"servers", 128},
                 {"inter_server", {{"rail_optimized", false}, {"switch_radix", 16}, {"spine_oversubscription", 4}}}}},
               {"model_params", {{"data_parallel", 4}, {"layers", 32}}},
               {"parallel", {{"device_num", 512}, {"global_batch_size", 256}}}});
  const Step spine_folded = Simulate(spine, "fold");
  CHECK(spine_folded.seconds == Approx(Simulate(spine, "off").seconds).epsilon(0.005));
  CHECK(spine_folded.seconds >= full_bisection.seconds);
}

}  // namespace

TEST_CASE("SimGrid refuses a step whose simulated devices would take minutes and runs it folded") {
  // 65,536 H100: every device simulated is 8192 lanes of 8 devices sending
  // every pass; folded, 1024 devices.
  const fs::path run = Variant("gpt3-175b-h100-4096", "gpt3-h100-65536",
                               {{"cluster", {{"servers", 8192}, {"inter_server", {{"switch_radix", 128}}}}},
                                {"model_params", {{"data_parallel", 512}}},
                                {"parallel", {{"device_num", 65536}, {"global_batch_size", 32768}}}});
  const CliResult every = Run("simulate '" + run.string() + "' --engine simgrid --symmetry off");
  CHECK(every.rc == 1);
  CHECK_THAT(every.err, Catch::Contains("on SimGrid (65536 of 65536 devices simulated") &&
                            Catch::Contains("more than its limit of 60 s") && Catch::Contains("--engine analytical"));
  const Step folded = Simulate(run, "fold");
  CHECK(folded.devices.find("1024 of 65536 devices simulated") != std::string::npos);
  CHECK(folded.seconds > 0);
}

TEST_CASE("a multi-plane fabric forwards between planes inside the server and folds as every device runs") {
  // Mixtral 8x7B on 64 H100, its rings crossing from one server's last rail to the next server's first.
  const fs::path planes = Variant("mixtral-8x7b-h100-64", "mixtral-multi-plane",
                                  {{"cluster", {{"inter_server", {{"multi_plane", true}}}}}});
  const Step folded = Simulate(planes, "fold");
  const Step every = Simulate(planes, "off");
  INFO(folded.devices);
  CHECK(folded.devices.find("devices simulated") != std::string::npos);
  CHECK(folded.seconds == Approx(every.seconds).epsilon(0.005));
  CheckSameLinkUsage(folded, every);
  // One network joins the rails at the leaves; planes send that traffic over NVSwitch first.
  const Step rails = Simulate(Variant("mixtral-8x7b-h100-64", "mixtral-rails", json::object()), "fold");
  CHECK(Mean(Usage(folded, "NVSwitch ports")) > Mean(Usage(rails, "NVSwitch ports")));
}
