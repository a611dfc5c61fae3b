#include "tests/hostile/hostile_case.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include <nlohmann/json.hpp>

#include "core/graph/op_types.h"
#include "tests/fuzz/json_tree_mutator.h"

namespace shardlab::hostile {
namespace {

using json = nlohmann::json;

class Draw {
 public:
  explicit Draw(uint64_t seed) : random_(seed) {}
  size_t Below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random_); }
  bool OneIn(size_t n) { return Below(n) == 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[Below(items.size())];
  }
  unsigned Seed() { return static_cast<unsigned>(random_()); }

 private:
  std::mt19937_64 random_;
};

struct Context {
  Draw& draw;
  const std::string& source;
  std::string Config(const std::string& relative) const { return source + "/configs/" + relative; }
};

// A document as a file's text; strings that are not UTF-8 get U+FFFD.
std::string Text(const json& doc) { return doc.dump(-1, ' ', false, json::error_handler_t::replace); }

json ReadShipped(const Context& c, const std::string& relative) {
  std::ifstream in(c.Config(relative));
  return json::parse(in);
}

// A shipped run with its cluster and model made absolute, ready to be written elsewhere.
json ShippedRun(const Context& c, const std::string& name) {
  json run = ReadShipped(c, "runs/" + name + ".json");
  for (const char* key : {"cluster", "model"})
    if (run[key].is_string()) run[key] = c.Config("runs/" + run[key].get<std::string>());
  return run;
}

// Runs that simulate in well under a second.
const std::vector<std::string> kSmallRuns = {
    "bert-large-a100-8",       "resnet50-ascend-8",     "seed-ffn-ascend-8",
    "tiny-gpt-cpu-dp2",        "tiny-gpt-cpu-mp2-pp2",  "tiny-gpt-cpu-pp2",
    "wide-deep-host-ascend-8", "bert-large-ascend-512", "pangu-alpha-13b-ascend-512"};

HostileCase Simulate(const std::string& klass, const std::string& what, const json& run, Verdict verdict) {
  HostileCase h{klass, what, {"simulate", "@run.json", "--out", "@out.json"}, {}, {"out.json"}, verdict};
  h.files["run.json"] = {CaseFile::Kind::kText, Text(run), 0};
  return h;
}

// --- layout, redistribute, devices -----------------------------------------

json Shape(Draw& d) {
  static const std::vector<int64_t> sizes = {1, 2, 8, 16, 64, 128};
  json s = json::array();
  for (size_t i = 0, n = 1 + d.Below(4); i < n; ++i) s.push_back(d.Pick(sizes));
  return s;
}

json OnesLike(const json& shapes) {
  json strategy = json::array();
  for (const json& s : shapes) strategy.push_back(std::vector<int64_t>(s.size(), 1));
  return strategy;
}

HostileCase Layout(const json& inputs, const json& strategy, const std::vector<std::string>& extra,
                   const std::string& op) {
  HostileCase h;
  h.args = {"layout", "--op", op, "--inputs", inputs.dump(), "--strategy", strategy.dump()};
  h.args.insert(h.args.end(), extra.begin(), extra.end());
  return h;
}

// Every operator type with too few or too many inputs (refused), or as many as it takes.
HostileCase LayoutArity(Context& c) {
  const OpTypeInfo& type = c.draw.Pick(OpTypes());
  const int count = static_cast<int>(c.draw.Below(static_cast<size_t>(type.max_inputs) + 2));
  json inputs = json::array();
  for (int i = 0; i < count; ++i) inputs.push_back(Shape(c.draw));
  HostileCase h = Layout(inputs, OnesLike(inputs), {"--devices", "8"}, type.name);
  h.klass = "layout: input count";
  h.what = type.name + " with " + std::to_string(count) + " inputs";
  h.verdict = count < type.min_inputs || count > type.max_inputs ? Verdict::kRefuse : Verdict::kEither;
  return h;
}

// A MatMul whose arguments carry one value no layout may have.
HostileCase LayoutValues(Context& c) {
  json inputs = {{128, 64}, {64, 32}};
  json strategy = {{2, 1}, {1, 4}};
  std::vector<std::string> extra = {"--devices", "8"};
  const std::vector<std::function<std::string()>> breakers = {
      [&] {
        strategy[0][0] = c.draw.Pick(std::vector<int64_t>{0, -1, 3, 6, int64_t{1} << 40});
        return "strategy value";
      },
      [&] {
        strategy[1][1] = 16;
        return "strategy using more devices than the stage";
      },
      [&] {
        strategy.erase(1);
        return "one strategy tuple missing";
      },
      [&] {
        strategy[0] = {2};
        return "strategy tuple shorter than the shape";
      },
      [&] {
        inputs[0][0] = c.draw.Pick(std::vector<int64_t>{0, -1, -128});
        return "shape dimension";
      },
      [&] {
        inputs[1][0] = 65;
        return "contraction dimensions that differ";
      },
      [&] {
        extra = {"--devices", c.draw.Pick(std::vector<std::string>{"0", "-8", "5000", "1e3", "nan", "eight"})};
        return "device count";
      },
      [&] {
        extra.insert(extra.end(), {"--rank", "8"});
        return "rank past the devices";
      },
      [&] {
        extra.insert(extra.end(), {"--dtype", c.draw.Pick(std::vector<std::string>{"float17", "", "FLOAT16 "})});
        return "dtype";
      },
      [&] {
        extra.insert(extra.end(), {"--attrs", c.draw.Pick(std::vector<std::string>{R"({"transposee_b": true})",
                                                                                   R"({"transpose_b": 1})", R"([true])",
                                                                                   R"({"transpose_b": true)"})});
        return "attributes";
      },
      [&] {
        extra.insert(extra.end(), {"--weights", c.draw.Pick(std::vector<std::string>{"[5]", "[-1]", "[0.5]", "1"})});
        return "weights";
      },
  };
  const std::string what = c.draw.Pick(breakers)();
  HostileCase h = Layout(inputs, strategy, extra, "MatMul");
  if (c.draw.OneIn(8)) {  // the same mistake as broken JSON text
    h.args[4] = h.args[4].substr(0, h.args[4].size() - 1);
  }
  h.klass = "layout: values";
  h.what = what;
  h.verdict = Verdict::kRefuse;
  return h;
}

HostileCase Redistribute(Context& c) {
  json from = {{"device_matrix", {8, 4}}, {"tensor_map", {1, 0}}};
  json to = {{"device_matrix", {8, 4}}, {"tensor_map", {0, 1}}};
  std::vector<std::string> extra;
  std::string shape = "[512,1024]";
  const std::vector<std::function<std::string()>> breakers = {
      [&] {
        to["device_matrix"] = {4, 4};
        return "device counts that differ";
      },
      [&] {
        from["tensor_map"] = {2, 0};
        return "tensor map past the matrix";
      },
      [&] {
        from["tensor_map"] = {1, 1};
        return "tensor map naming a dimension twice";
      },
      [&] {
        from["tensor_map"] = {1};
        return "tensor map shorter than the shape";
      },
      [&] {
        shape = "[500,1024]";
        return "shape the split does not divide";
      },
      [&] {
        from["device_matrix"] = {0, 4};
        return "zero in the device matrix";
      },
      [&] {
        from.erase("tensor_map");
        return "missing tensor map";
      },
      [&] {
        from["tensor_mapp"] = {1, 0};
        return "misspelled key";
      },
      [&] {
        extra = {"--rank", "32"};
        return "rank past the devices";
      },
      [&] {
        shape = "[512,-1]";
        return "negative dimension";
      },
      [&] {
        shape = "";
        return "no shape anywhere";
      },
  };
  HostileCase h;
  h.what = c.draw.Pick(breakers)();
  h.args = {"redistribute", "--from", from.dump(), "--to", to.dump()};
  if (!shape.empty()) h.args.insert(h.args.end(), {"--shape", shape});
  h.args.insert(h.args.end(), extra.begin(), extra.end());
  h.klass = "redistribute";
  h.verdict = Verdict::kRefuse;
  return h;
}

HostileCase Devices(Context& c) {
  std::string matrix = "[2,2,3]", map, rank = "0";
  const std::vector<std::function<std::string()>> breakers = {
      [&] {
        matrix = "[2,0,3]";
        return "zero dimension";
      },
      [&] {
        matrix = "[2,-2]";
        return "negative dimension";
      },
      [&] {
        matrix = "[4096,4096,4096,4096,4096,4096]";
        return "product that overflows";
      },
      [&] {
        matrix = "[1";
        for (int i = 1; i < 60000; ++i) matrix += ",1";
        matrix += "]";
        return "60,000 dimensions";
      },
      [&] {
        matrix = "[1024,1024]";
        return "more devices than any cluster";
      },
      [&] {
        matrix = "[]";
        return "no dimension";
      },
      [&] {
        map = "[3,0]";
        return "tensor map past the matrix";
      },
      [&] {
        map = "[0,0]";
        return "tensor map naming a dimension twice";
      },
      [&] {
        rank = "12";
        return "rank past the devices";
      },
      [&] {
        matrix = "[2,2,3";
        return "broken JSON";
      },
      [&] {
        matrix = "[2,2,1e400]";
        return "overflowing number";
      },
  };
  HostileCase h;
  h.what = c.draw.Pick(breakers)();
  h.args = {"devices", "--matrix", matrix, "--rank", rank};
  if (!map.empty()) h.args.insert(h.args.end(), {"--tensor-map", map});
  h.klass = "devices";
  h.verdict = Verdict::kRefuse;
  return h;
}

// --- run files ------------------------------------------------------------

// A shipped run with one to three random structural edits.
HostileCase RunMutation(Context& c) {
  json run = ShippedRun(c, c.draw.Pick(kSmallRuns));
  const size_t edits = 1 + c.draw.Below(3);
  for (size_t i = 0; i < edits; ++i) fuzz::MutateJsonTree(run, c.draw.Seed());
  HostileCase h = Simulate("run: random edits", std::to_string(edits) + " random edits", run, Verdict::kEither);
  if (c.draw.OneIn(10)) h.args.insert(h.args.end(), {"--engine", "simgrid"});
  return h;
}

// A shipped run with one value that is certainly wrong.
HostileCase RunInvalidValue(Context& c) {
  json run = ShippedRun(c, c.draw.Pick(kSmallRuns));
  json& p = run["parallel"];
  const std::vector<std::function<std::string()>> breakers = {
      [&] {
        p["device_num"] = c.draw.Pick(std::vector<json>{0, -8, 3.5, "8", int64_t{1} << 40, nullptr});
        return "device_num";
      },
      [&] {
        p["global_batch_size"] = c.draw.Pick(std::vector<json>{0, -1, 1.5, "256"});
        return "global_batch_size";
      },
      [&] {
        p["pipeline_stages"] = c.draw.Pick(std::vector<json>{0, -1, 5000});
        return "pipeline_stages";
      },
      [&] {
        p["micro_batch_num"] = c.draw.Pick(std::vector<json>{0, -4});
        return "micro_batch_num";
      },
      [&] {
        p["parallel_mode"] = c.draw.Pick(std::vector<json>{"semi_auto", "", 1});
        return "parallel_mode";
      },
      [&] {
        p["all_reduce_fusion_config"] = c.draw.Pick(std::vector<json>{json{100000}, json{5, 3}, json{0}, json{-1}});
        return "all_reduce_fusion_config";
      },
      [&] {
        p["enable_parallel_optimizer"] = true;
        p["optimizer_weight_shard_size"] = 0;
        return "optimizer_weight_shard_size 0";
      },
      [&] {  // a key misspelled by one letter
        std::vector<std::string> keys;
        for (const auto& item : p.items()) keys.push_back(item.key());
        const std::string key = c.draw.Pick(keys);
        json v = p[key];
        p.erase(key);
        p[key + "s"] = v;
        return "misspelled parallel key " + key;
      },
      [&] {
        run.erase(c.draw.Pick(std::vector<std::string>{"name", "cluster", "model", "parallel"}));
        return "required key missing";
      },
      [&] {
        run["cluster"] = c.draw.Pick(std::vector<json>{"", "/nonexistent.json", 7, json::array()});
        return "cluster reference";
      },
      [&] {
        run["model_params"] = {{"hidden_sizee", 1}};
        return "unknown model parameter";
      },
      [&] {
        run["simulation"] = {{"engine", "simgridd"}};
        return "engine name";
      },
  };
  const std::string what = c.draw.Pick(breakers)();
  return Simulate("run: invalid value", what, run, Verdict::kRefuse);
}

// A cluster (the run's, inline) with one physical figure that cannot be.
HostileCase ClusterInvalidValue(Context& c) {
  json run = ShippedRun(c, c.draw.Pick(kSmallRuns));
  json cluster = json::parse(std::ifstream(run["cluster"].get<std::string>()));
  const std::vector<std::function<std::string()>> breakers = {
      [&] {
        cluster["intra_server"]["link_bandwidth"] =
            c.draw.Pick(std::vector<json>{"1e-320 B/s", 0, "-5 GB/s", "0 GB/s", 1e-320});
        return "intra-server bandwidth";
      },
      [&] {
        cluster["device"]["memory"] = c.draw.Pick(std::vector<json>{"0 B", "-1 GB", "1e30 B", "lots"});
        return "device memory";
      },
      [&] {
        cluster["device"]["peak_flops"] = json::object();
        return "no peak FLOP/s";
      },
      [&] {
        cluster["servers"] = c.draw.Pick(std::vector<json>{0, -1, int64_t{1} << 40});
        return "server count";
      },
      [&] {
        cluster["devices_per_server"] = c.draw.Pick(std::vector<json>{0, 3.5, 100000});
        return "devices per server";
      },
      [&] {
        cluster["device"]["kernel_overhead"] = c.draw.Pick(std::vector<json>{"-1 us", "1e9 s", "nan us"});
        return "kernel overhead";
      },
      [&] {
        cluster["device"]["compute_efficiency"] = c.draw.Pick(std::vector<json>{0, -0.5, 1.5, "high"});
        return "compute efficiency";
      },
      [&] {
        cluster["device"]["kind"] = "tpu";
        return "device kind";
      },
  };
  const std::string what = c.draw.Pick(breakers)();
  run["cluster"] = cluster;
  return Simulate("cluster: invalid value", what, run, Verdict::kRefuse);
}

// Work a config value multiplies: either done quickly or refused up front.
HostileCase WorkSize(Context& c) {
  const bool big = c.draw.OneIn(3);
  json run = ShippedRun(c, big ? "gpt3-175b-ascend-4096" : "pangu-alpha-13b-ascend-512");
  json& p = run["parallel"];
  const int64_t micro = int64_t{1} << (4 + c.draw.Below(17));  // 16 .. 2^20
  p["micro_batch_num"] = micro;
  p["global_batch_size"] = micro * c.draw.Pick(std::vector<int64_t>{1, 64});
  HostileCase h = Simulate("work: micro-batches", std::to_string(micro) + " micro-batches", run, Verdict::kEither);
  if (c.draw.OneIn(4)) h.args.insert(h.args.end(), {"--engine", "simgrid"});
  return h;
}

// --- files ------------------------------------------------------------------

CaseFile Special(Context& c, std::string* what) {
  const std::vector<std::pair<std::string, CaseFile>> kinds = {
      {"/dev/zero", {CaseFile::Kind::kSymlink, "/dev/zero", 0}},
      {"/dev/null", {CaseFile::Kind::kSymlink, "/dev/null", 0}},
      {"a FIFO", {CaseFile::Kind::kFifo, "", 0}},
      {"a folder", {CaseFile::Kind::kFolder, "", 0}},
      {"a dangling link", {CaseFile::Kind::kSymlink, "/nonexistent/shardlab", 0}},
      {"a link to itself", {CaseFile::Kind::kSymlink, "special", 0}},
      {"an empty file", {CaseFile::Kind::kText, "", 0}},
      {"a 300 MiB file", {CaseFile::Kind::kSparse, "", int64_t{300} << 20}},
      {"binary bytes", {CaseFile::Kind::kText, std::string("\x00\xff\xfe{\x01\"", 6), 0}},
      {"a JSON number", {CaseFile::Kind::kText, "42", 0}},
      {"JSON with a NUL", {CaseFile::Kind::kText, std::string("{\"name\": \"a\0b\"}", 15), 0}},
  };
  const auto& pick = c.draw.Pick(kinds);
  *what = pick.first;
  return pick.second;
}

// A special file where a config file is expected: the run itself, or a file it names.
HostileCase SpecialFile(Context& c) {
  std::string what;
  const CaseFile special = Special(c, &what);
  json run = ShippedRun(c, c.draw.Pick(kSmallRuns));
  const std::string role = c.draw.Pick(std::vector<std::string>{"run", "cluster", "model", "checkpoint", "calibration",
                                                                "sweep", "tune-fusion run", "validate-run run"});
  HostileCase h;
  h.klass = "files: special files";
  h.what = role + " is " + what;
  h.verdict = Verdict::kRefuse;
  h.files["special"] = special;
  if (role == "run") {
    h.args = {"simulate", "@special"};
  } else if (role == "sweep") {
    h.args = {"sweep", "@special"};
  } else if (role == "tune-fusion run") {
    h.args = {"tune-fusion", "@special", "--jobs", "1"};
  } else if (role == "validate-run run") {
    h.args = {"validate-run", "@special", "--backend", "gloo"};
  } else {
    if (role == "cluster" || role == "model") run[role] = "special";
    if (role == "checkpoint") {
      run["parallel"]["parallel_mode"] = "semi_auto_parallel";
      run["parallel"]["strategy_ckpt_load_file"] = "special";
    }
    if (role == "calibration") {
      json cluster = json::parse(std::ifstream(run["cluster"].get<std::string>()));
      cluster["calibration"] = "special";
      run["cluster"] = cluster;
    }
    h.files["run.json"] = {CaseFile::Kind::kText, Text(run), 0};
    h.args = {"simulate", "@run.json"};
  }
  return h;
}

// Where results go: special files, links, long and impossible names.
HostileCase OutputTarget(Context& c) {
  json run = ShippedRun(c, c.draw.Pick(std::vector<std::string>{"tiny-gpt-cpu-dp2", "seed-ffn-ascend-8"}));
  HostileCase h;
  h.klass = "files: outputs";
  h.files["run.json"] = {CaseFile::Kind::kText, Text(run), 0};
  const std::string option = c.draw.Pick(std::vector<std::string>{"--out", "--trace"});
  std::string target = "@out.json";
  h.verdict = Verdict::kRefuse;
  switch (c.draw.Below(7)) {
    case 0:
      h.what = "/dev/null";
      target = "/dev/null";
      h.verdict = Verdict::kEither;
      break;
    case 1:
      h.what = "a FIFO nobody reads";
      h.files["out.json"] = {CaseFile::Kind::kFifo, "", 0};
      h.outputs = {"out.json"};
      break;
    case 2:
      h.what = "a folder";
      h.files["out.json"] = {CaseFile::Kind::kFolder, "", 0};
      h.outputs = {"out.json"};
      break;
    case 3:
      h.what = "a link to a file";
      h.files["target.json"] = {CaseFile::Kind::kText, "{}", 0};
      h.files["out.json"] = {CaseFile::Kind::kSymlink, "target.json", 0};
      h.outputs = {"out.json", "target.json"};
      h.verdict = Verdict::kEither;
      break;
    case 4:
      h.what = "a folder that does not exist";
      target = "@missing/out.json";
      break;
    case 5:
      h.what = "a 300-character name";
      target = "@" + std::string(300, 'o');
      break;
    default:
      h.what = "a 250-character name";
      target = "@" + std::string(245, 'o') + ".json";
      h.outputs = {std::string(245, 'o') + ".json"};
      h.verdict = Verdict::kEither;
  }
  h.args = {"simulate", "@run.json", option, target};
  return h;
}

// --- numbers on the command line -------------------------------------------

HostileCase CliNumber(Context& c) {
  const std::string bert = c.Config("runs/bert-large-a100-8.json");
  const std::string cluster = c.Config("clusters/dgx-a100-hdr.json");
  // Not a number of the option's kind, or out of its range ("0x10" and "1,5" would be
  // valid: CLI11 reads hexadecimal integers, and --trace-ranks takes a list).
  const std::string bad = c.draw.Pick(std::vector<std::string>{"nan", "inf", "-inf", "-1", "1e400", "", "ten"});
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"tune-fusion --time-budget", {"tune-fusion", bert, "--jobs", "1", "--time-budget", bad}},
      {"tune-fusion --verify-margin", {"tune-fusion", bert, "--jobs", "1", "--verify-margin", bad}},
      {"tune-fusion --max-buckets", {"tune-fusion", bert, "--jobs", "1", "--max-buckets", bad}},
      {"collective --bytes", {"collective", "--cluster", cluster, "--bytes", bad + "B"}},
      {"collective --ranks", {"collective", "--cluster", cluster, "--ranks", bad}},
      {"simulate --trace-ranks", {"simulate", bert, "--trace-ranks", bad.empty() ? "99999" : bad}},
      {"compare --jobs", {"compare", bert, "--jobs", bad}},
      {"validate-run --ranks", {"validate-run", bert, "--backend", "gloo", "--ranks", bad}},
  };
  const auto& command = c.draw.Pick(commands);
  HostileCase h;
  h.klass = "command line: numbers";
  h.what = command.first + " " + bad;
  h.args = command.second;
  h.verdict = Verdict::kRefuse;
  if (c.draw.OneIn(4)) {  // sizes past what any buffer is
    h.what = "collective --bytes 1e20B";
    h.args = {"collective", "--cluster", cluster, "--bytes",
              c.draw.Pick(std::vector<std::string>{"1e20B", "2TiB", "1PiB:2PiB"})};
  }
  return h;
}

// --- other input kinds -------------------------------------------------------

HostileCase SweepMutation(Context& c) {
  json sweep = ReadShipped(c, "sweeps/bert-large-clusters.json");
  sweep["run"] = c.Config("runs/bert-large-a100-8.json");
  sweep["engine"] = "analytical";
  sweep["grid"] = {{"parallel.global_batch_size", {128, 256}},
                   {"parallel.all_reduce_fusion_config", {{100, 250}, {2}}}};
  const size_t edits = 1 + c.draw.Below(2);
  for (size_t i = 0; i < edits; ++i) fuzz::MutateJsonTree(sweep, c.draw.Seed());
  HostileCase h{"sweep: random edits",
                std::to_string(edits) + " random edits",
                {"sweep", "@sweep.json", "--jobs", "1", "--out", "@table.csv"},
                {},
                {"table.csv"},
                Verdict::kEither};
  h.files["sweep.json"] = {CaseFile::Kind::kText, Text(sweep), 0};
  return h;
}

HostileCase SweepInvalid(Context& c) {
  json sweep = {{"run", c.Config("runs/bert-large-a100-8.json")}, {"engine", "analytical"}};
  const std::vector<std::function<std::string()>> breakers = {
      [&] {
        sweep["grid"] = {{"paralel.global_batch_size", {8, 16}}};
        return "grid key typo";
      },
      [&] {
        sweep["grid"] = {{"name.x", {1}}};
        return "grid key through a string";
      },
      [&] {
        sweep["grid"] = {{"parallel..x", {1}}};
        return "empty part in a grid key";
      },
      [&] {
        sweep["grid"] = {{"parallel.global_batch_size", json::array()}};
        return "no values";
      },
      [&] {
        sweep["grid"] = json::object();
        return "empty grid";
      },
      [&] {
        sweep["grid"] = {{"cluster", {7}}};
        return "cluster that is not a path";
      },
      [&] {
        sweep["grid"] = {{"parallel.global_batch_size", {0, -1}}};
        return "every point invalid";
      },
      [&] {
        sweep["engine"] = "simgridd";
        sweep["grid"] = {{"parallel.global_batch_size", {8}}};
        return "engine";
      },
      [&] {
        json a = json::array(), b = json::array();
        for (int i = 1; i <= 400; ++i) a.push_back(i), b.push_back(i);
        sweep["grid"] = {{"parallel.device_num", a}, {"parallel.global_batch_size", b}};
        return "160,000 points";
      },
  };
  HostileCase h;
  h.what = c.draw.Pick(breakers)();
  h.klass = "sweep: invalid";
  h.files["sweep.json"] = {CaseFile::Kind::kText, Text(sweep), 0};
  h.args = {"sweep", "@sweep.json", "--jobs", "1"};
  h.verdict = Verdict::kRefuse;
  return h;
}

// A strategy checkpoint with random edits, loaded by a semi_auto_parallel run.
HostileCase CheckpointMutation(Context& c) {
  json run = ShippedRun(c, "tiny-gpt-cpu-mp2-pp2");
  // The strategies the run saves (the fuzz corpus' seeds): a plausible base to edit.
  const std::string seeds = c.source + "/tests/fuzz/corpus/checkpoint_";
  json checkpoint = json::parse(std::ifstream(seeds + "json/tiny-gpt-cpu-mp2-pp2.json"));
  const size_t edits = 1 + c.draw.Below(3);
  for (size_t i = 0; i < edits; ++i) fuzz::MutateJsonTree(checkpoint, c.draw.Seed());
  run["parallel"]["strategy_ckpt_load_file"] = "ckpt.json";
  HostileCase h = Simulate("checkpoint: random edits", std::to_string(edits) + " random edits", run, Verdict::kEither);
  h.files["ckpt.json"] = {CaseFile::Kind::kText, Text(checkpoint), 0};
  if (c.draw.OneIn(3)) {  // the protobuf form: bytes, some flipped
    std::ifstream in(seeds + "proto/tiny-gpt-cpu-mp2-pp2.ckpt", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty()) bytes = "\x08\x01";
    for (size_t i = 0, n = 1 + c.draw.Below(4); i < n; ++i)
      bytes[c.draw.Below(bytes.size())] ^= static_cast<char>(1 << c.draw.Below(8));
    run["parallel"]["strategy_ckpt_load_file"] = "ckpt.ckpt";
    h.files.erase("ckpt.json");
    h.files["run.json"].content = Text(run);
    h.files["ckpt.ckpt"] = {CaseFile::Kind::kText, bytes, 0};
  }
  return h;
}

// A calibration file with random edits, named by the run's cluster.
HostileCase CalibrationMutation(Context& c) {
  json run = ShippedRun(c, "tiny-gpt-cpu-dp2");
  json cluster = json::parse(std::ifstream(run["cluster"].get<std::string>()));
  json calibration = ReadShipped(c, "calibration/localhost-cpu.json");
  const size_t edits = 1 + c.draw.Below(3);
  for (size_t i = 0; i < edits; ++i) fuzz::MutateJsonTree(calibration, c.draw.Seed());
  cluster["calibration"] = "calibration.json";
  run["cluster"] = cluster;
  HostileCase h = Simulate("calibration: random edits", std::to_string(edits) + " random edits", run, Verdict::kEither);
  h.files["calibration.json"] = {CaseFile::Kind::kText, Text(calibration), 0};
  return h;
}

// Strings no config should carry: huge, with terminal escapes, as keys.
HostileCase HostileStrings(Context& c) {
  json run = ShippedRun(c, c.draw.Pick(kSmallRuns));
  std::string what;
  Verdict verdict = Verdict::kRefuse;
  switch (c.draw.Below(5)) {
    case 0:
      run[std::string(50u << 20, 'k')] = 1;
      what = "a 50 MB unknown key";
      break;
    case 4: {  // written as text: printing such a tree would recurse 100,000 deep here
      run["parallel"]["device_num"] = "DEEP";
      HostileCase h = Simulate("", "a list nested 100,000 deep", run, verdict);
      std::string& text = h.files["run.json"].content;
      text.replace(text.find("\"DEEP\""), 6, std::string(100000, '[') + std::string(100000, ']'));
      return h;
    }
    case 1:
      run["parallel"]["parallel_mode"] = "\x1b[2J\x1b[31mred\nsecond line";
      what = "escape codes in a value";
      break;
    case 2:
      run["name"] = std::string(1u << 20, 'n') + "\x1b[0m";
      what = "a 1 MB name with an escape";
      verdict = Verdict::kEither;
      break;
    default:
      run["parallel"]["\x07\x1b]0;title\x07"] = 1;
      what = "escape codes in a key";
      break;
  }
  HostileCase h = Simulate("strings: size and escapes", what, run, verdict);
  return h;
}

struct CaseClass {
  const char* name;
  int weight;  // cases per 1000
  HostileCase (*make)(Context&);
};

const std::vector<CaseClass>& Classes() {
  static const std::vector<CaseClass> classes = {
      {"layout: input count", 110, LayoutArity},
      {"layout: values", 100, LayoutValues},
      {"redistribute", 60, Redistribute},
      {"devices", 60, Devices},
      {"run: random edits", 170, RunMutation},
      {"run: invalid value", 120, RunInvalidValue},
      {"cluster: invalid value", 70, ClusterInvalidValue},
      {"work: micro-batches", 20, WorkSize},
      {"files: special files", 70, SpecialFile},
      {"files: outputs", 40, OutputTarget},
      {"command line: numbers", 50, CliNumber},
      {"sweep: random edits", 20, SweepMutation},
      {"sweep: invalid", 30, SweepInvalid},
      {"checkpoint: random edits", 30, CheckpointMutation},
      {"calibration: random edits", 30, CalibrationMutation},
      {"strings: size and escapes", 20, HostileStrings},
  };
  return classes;
}

}  // namespace

std::vector<std::string> CaseClasses() {
  std::vector<std::string> names;
  for (const CaseClass& c : Classes()) names.push_back(c.name);
  return names;
}

HostileCase MakeCase(uint64_t seed, uint64_t index, const std::string& source_dir) {
  Draw draw(seed * 1000003u + index);
  int total = 0;
  for (const CaseClass& c : Classes()) total += c.weight;
  int pick = static_cast<int>(draw.Below(static_cast<size_t>(total)));
  for (const CaseClass& c : Classes()) {
    if (pick < c.weight) {
      Context context{draw, source_dir};
      HostileCase h = c.make(context);
      h.klass = c.name;
      return h;
    }
    pick -= c.weight;
  }
  return {};
}

}  // namespace shardlab::hostile
