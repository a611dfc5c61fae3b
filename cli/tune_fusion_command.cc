// `shardlab tune-fusion RUN.json`: searches all_reduce_fusion_config split
// indices (or a comm_fusion size threshold) that minimise the simulated step.
// The fast model (core/search/fusion_model.h) proposes candidates, exactly
// optimal for it by dynamic programming over split points; the best of them
// and MindSpore's defaults are verified with the full engine (one child
// process each, on every core, or across `mpirun` ranks); the best verified
// one wins and can be written back as a run file that differs only in the
// tuned keys.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_evaluation.h"
#include "core/flow/prepared_run.h"
#include "core/report/svg_chart.h"
#include "core/search/fusion_model.h"
#include "core/util/atomic_file.h"
#include "core/util/json_reader.h"
#include "sim/simulate.h"

namespace shardlab::cli {
namespace {

struct Candidate {
  std::string kind;  // tuned | default | auto | unfused | current
  FusionSetting setting;
  bool current = false;  // the run's own setting (under whichever kind listed it first)
  double fast_seconds = 0;
  size_t buckets = 0;  // on the critical stage, in the fast model
  ChildJobResult verification;
  nlohmann::json result;  // the verified step, when it ran
  bool Verified() const { return verification.status == ChildJobResult::Status::kOk; }
  double VerifiedSeconds() const { return result.at("step_seconds").get<double>(); }
};

std::string Describe(const FusionSetting& s) {
  switch (s.mode) {
    case FusionSetting::Mode::kDefault:
      return "one bucket";
    case FusionSetting::Mode::kAuto:
      return "auto (64 MB)";
    case FusionSetting::Mode::kSize:
      return s.size_mb == 0 ? "no fusion" : fmt::format("size {} MB", s.size_mb);
    case FusionSetting::Mode::kIndex: {
      if (s.indices.size() <= 6) return fmt::format("index [{}]", fmt::join(s.indices, ", "));
      return fmt::format("index [{}, {}, {}, ... {}] ({})", s.indices[0], s.indices[1], s.indices[2], s.indices.back(),
                         s.indices.size());
    }
  }
  return "";
}

template <typename Fusion>  // CommFusion or const CommFusion
auto& SettingOf(Fusion& fusion, Collective op) {
  if (op == Collective::kAllGather) return fusion.allgather;
  if (op == Collective::kReduceScatter) return fusion.reducescatter;
  return fusion.allreduce;
}

nlohmann::ordered_json SettingJson(const FusionSetting& s) {
  nlohmann::ordered_json j;
  switch (s.mode) {
    case FusionSetting::Mode::kDefault:
    case FusionSetting::Mode::kAuto:
      j = {{"mode", "auto"}, {"config", nullptr}};
      break;
    case FusionSetting::Mode::kSize:
      j = {{"mode", "size"}, {"config", s.size_mb}};
      break;
    case FusionSetting::Mode::kIndex:
      j = {{"mode", "index"}, {"config", s.indices}};
      break;
  }
  return j;
}

// A path of the input run rewritten relative to the output's folder.
std::string Rebase(const std::string& path, const std::filesystem::path& from, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::absolute(from / path).lexically_normal()).lexically_relative(fs::absolute(to)).string();
}

// The input run file with only the tuned key changed (and relative paths
// rebased when the output lives in another folder).
void WriteTunedRun(const std::string& in, const std::string& out, Collective op, const FusionSetting& s) {
  namespace fs = std::filesystem;
  ReadJsonFile(in);  // reports a malformed file with its position
  std::ifstream file(in);
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(file);  // keeps the author's key order
  auto& parallel = doc["parallel"];
  const std::string key = ToString(op);
  const bool has_comm_fusion_entry = parallel.contains("comm_fusion") && parallel["comm_fusion"].contains(key);
  if (op == Collective::kAllReduce) {
    const bool as_list = s.mode == FusionSetting::Mode::kIndex && !has_comm_fusion_entry;
    if (as_list) {
      parallel["all_reduce_fusion_config"] = s.indices;
    } else {
      parallel.erase("all_reduce_fusion_config");
    }
    if (as_list || s.mode == FusionSetting::Mode::kDefault) {
      if (parallel.contains("comm_fusion")) {
        parallel["comm_fusion"].erase(key);
        if (parallel["comm_fusion"].empty()) parallel.erase("comm_fusion");
      }
    } else {
      parallel["comm_fusion"][key] = SettingJson(s);
    }
  } else if (s.mode == FusionSetting::Mode::kDefault) {
    if (parallel.contains("comm_fusion")) parallel["comm_fusion"].erase(key);
  } else {
    parallel["comm_fusion"][key] = SettingJson(s);
  }
  const fs::path from = fs::path(in).parent_path(), to = fs::path(out).parent_path();
  if (fs::absolute(from).lexically_normal() != fs::absolute(to).lexically_normal()) {
    for (const char* k : {"cluster", "model"})
      if (doc.contains(k) && doc[k].is_string()) doc[k] = Rebase(doc[k].get<std::string>(), from, to);
    for (const char* k : {"strategy_ckpt_load_file", "strategy_ckpt_save_file"})
      if (parallel.contains(k) && parallel[k].is_string())
        parallel[k] = Rebase(parallel[k].get<std::string>(), from, to);
  }
  WriteFileAtomically(out, doc.dump(2) + "\n");
}

// The winner's buckets on the critical stage, drawn over the last backward pass.
std::string TimelineChart(const FusionProblem& problem, const FusionEstimate& estimate) {
  const FusionStage* stage = nullptr;
  for (const auto& s : problem.stages)
    if (s.stage == estimate.critical_stage) stage = &s;
  if (!stage || estimate.buckets.empty()) return "";
  double end = stage->passes_end;
  for (const auto& b : estimate.buckets) end = std::max(end, b.finish);
  const double begin = std::min(stage->backward_start, estimate.buckets.front().ready);
  const int width = 64;
  auto col = [&](double t) {
    return std::clamp(static_cast<int>(std::lround((t - begin) / (end - begin) * width)), 0, width);
  };
  // Buckets alternate '#' and '=' so that neighbours stay apart; wide ones carry their number.
  std::string backward(width + 1, ' '), stream(width + 1, ' '), ready(width + 1, ' ');
  for (int c = col(stage->backward_start); c < col(stage->passes_end); ++c) backward[c] = '=';
  for (size_t i = 0; i < estimate.buckets.size(); ++i) {
    const auto& b = estimate.buckets[i];
    const int a = col(b.start), z = std::min(std::max(col(b.finish), a + 1), width + 1);
    for (int c = a; c < z; ++c) stream[c] = i % 2 ? '=' : '#';
    const std::string label = std::to_string(i + 1);
    if (z - a >= static_cast<int>(label.size()) + 2) stream.replace(a + 1, label.size(), label);
    ready[col(b.ready)] = '^';
  }
  std::string out =
      fmt::format("last backward pass of stage {} with the winner ({:.4g} s .. {:.4g} s):\n", stage->stage, begin, end);
  out += "  backward compute |" + backward + "\n";
  out += "  bucket stream    |" + stream + "\n";
  out += "  bucket ready     |" + ready + "\n";
  out += fmt::format("  tail past the backward pass: {:.4g} s over {} collectives\n", estimate.tail_seconds,
                     estimate.buckets.size());
  return out;
}

// Fails before any work when an output's folder does not exist.
void CheckOutputFolder(const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
  if (!std::filesystem::is_directory(folder))
    throw std::runtime_error("cannot write " + path + ": folder " + folder.string() + " does not exist");
}

}  // namespace

int TuneFusion(const TuneFusionArgs& args) {
  const double start = SteadySeconds();
  CheckOutputFolder(args.out_file);
  CheckOutputFolder(args.plot_file);
  exec::MpiWorld world;
  const RunSpec run = LoadRunFile(args.run_file);
  const Collective op = ParseCollective(args.op);
  const ParallelConfig& p = run.parallel;
  if (!p.comm_fusion.openstate)
    throw std::runtime_error(args.run_file +
                             ": /parallel/comm_fusion/openstate is false, so MindSpore fuses nothing; set it to true "
                             "to tune fusion");
  std::string mode = args.mode;
  if (mode.empty()) mode = op == Collective::kAllReduce && !p.enable_parallel_optimizer ? "index" : "size";
  if (mode == "index" && op != Collective::kAllReduce)
    throw std::runtime_error("--mode index applies to AllReduce only; MindSpore fuses " + args.op + " by size");
  if (mode == "index" && p.enable_parallel_optimizer)
    throw std::runtime_error(args.run_file +
                             ": with enable_parallel_optimizer MindSpore ignores all_reduce_fusion_config; tune "
                             "with --mode size");
  if (op == Collective::kReduceScatter || op == Collective::kAllGather)
    if (!p.enable_parallel_optimizer)
      throw std::runtime_error(args.run_file + ": no " + args.op +
                               " fusion to tune: the parallel optimizer (enable_parallel_optimizer) is off");

  const PreparedRun prepared = Prepare(run);
  const FusionProblem problem = BuildFusionProblem(run, prepared.sharded);
  const FusionSetting current = SettingOf(p.comm_fusion, op);

  // The fast model: exact closed form for gradient buckets; the AllGathers
  // at the step's start go through lowering and the analytical engine.
  auto fast = [&](const FusionSetting& s, size_t* buckets) {
    if (op != Collective::kAllGather) {
      const FusionEstimate e = Estimate(problem, op, s);
      *buckets = e.collectives;
      return e.step_seconds;
    }
    RunSpec variant = run;
    SettingOf(variant.parallel.comm_fusion, op) = s;
    const PreparedRun v = Relower(prepared, variant);
    const StepResult r = sim::SimulateStep(v, Engine::kAnalytical);
    *buckets = v.plan.stages[r.slowest_stage].step_start.size();
    return r.step_seconds;
  };

  std::vector<Candidate> candidates;
  auto add = [&](const std::string& kind, const FusionSetting& s) {
    for (Candidate& c : candidates)
      if (c.setting == s) {
        c.current = c.current || kind == "current";
        return;
      }
    Candidate c;
    c.kind = kind;
    c.setting = s;
    c.current = kind == "current";
    c.fast_seconds = fast(s, &c.buckets);
    candidates.push_back(std::move(c));
  };
  FusionSetting setting;
  add("default", setting);
  setting.mode = FusionSetting::Mode::kAuto;
  add("auto", setting);
  setting.mode = FusionSetting::Mode::kSize;
  setting.size_mb = 0;
  add("unfused", setting);
  add("current", current);
  const size_t baselines = candidates.size();

  // Tuned candidates and the curve of the fast model's best per bucket count.
  std::map<size_t, double> curve;
  size_t gradients = 0;
  int64_t list_stage = 0;
  if (mode == "index") {
    const auto [stage, index] = MainList(problem, op);
    if (stage < 0) throw std::runtime_error(args.run_file + ": the run has no " + args.op + " gradients to fuse");
    const FusionList& list = problem.stages[stage].lists[index];
    gradients = list.gradients.size();
    list_stage = problem.stages[stage].stage;
    const auto splits = OptimalSplits(list, static_cast<size_t>(args.max_buckets), false);
    for (size_t k = 2; k <= splits.size(); ++k) {
      if (splits[k - 1].empty()) continue;
      setting = FusionSetting{};
      setting.mode = FusionSetting::Mode::kIndex;
      setting.indices = SplitIndices(splits[k - 1]);
      add("tuned", setting);
    }
  } else {
    // Thresholds from 1 MB up to the largest list, every MB to 64, then 10% apart.
    const double unit = problem.data_parallel ? 262144.0 : 1048576.0;
    double largest = 0;
    for (const auto& stage : problem.stages)
      for (const auto& list : stage.lists)
        if (list.collective == (op == Collective::kAllGather ? Collective::kReduceScatter : op)) {
          largest = std::max(largest, list.Bytes());
          gradients = std::max(gradients, list.gradients.size());
        }
    if (largest == 0) throw std::runtime_error(args.run_file + ": the run has no " + args.op + " buckets to fuse");
    std::vector<int64_t> thresholds;
    for (double mb = 1; mb <= largest / unit * 1.1 + 1; mb = mb < 64 ? mb + 1 : std::ceil(mb * 1.1))
      thresholds.push_back(static_cast<int64_t>(mb));
    std::map<size_t, Candidate> best_per_count;
    for (int64_t mb : thresholds) {
      setting = FusionSetting{};
      setting.mode = FusionSetting::Mode::kSize;
      setting.size_mb = mb;
      Candidate c;
      c.kind = "tuned";
      c.setting = setting;
      c.fast_seconds = fast(setting, &c.buckets);
      auto it = best_per_count.find(c.buckets);
      if (it == best_per_count.end() || c.fast_seconds < it->second.fast_seconds) best_per_count[c.buckets] = c;
    }
    for (auto& [count, c] : best_per_count) {
      bool duplicate = false;
      for (const Candidate& other : candidates) duplicate = duplicate || other.setting == c.setting;
      if (!duplicate) candidates.push_back(c);
    }
  }
  for (const Candidate& c : candidates)
    if (!curve.count(c.buckets) || c.fast_seconds < curve[c.buckets]) curve[c.buckets] = c.fast_seconds;
  const double search_seconds = SteadySeconds() - start;

  // Verification: the baselines and the fast model's best tuned candidates.
  std::vector<size_t> order(candidates.size() - baselines);
  for (size_t i = 0; i < order.size(); ++i) order[i] = baselines + i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return candidates[a].fast_seconds < candidates[b].fast_seconds; });
  // Only candidates that beat every candidate with fewer buckets are worth a
  // simulation (more buckets pay more latencies and contend more).
  // MindSpore's default (the reference) and the user's setting are always
  // verified; other candidates only within the margin of the fast model's best.
  double best_fast = candidates[0].fast_seconds;
  for (const Candidate& c : candidates) best_fast = std::min(best_fast, c.fast_seconds);
  auto within_margin = [&](const Candidate& c) { return c.fast_seconds <= best_fast * (1 + args.verify_margin); };
  std::vector<size_t> to_verify;
  for (size_t i = 0; i < baselines; ++i)
    if (candidates[i].kind == "default" || candidates[i].current || within_margin(candidates[i]))
      to_verify.push_back(i);
  for (size_t i = 0, taken = 0; i < order.size() && taken < static_cast<size_t>(args.verify); ++i) {
    const Candidate& c = candidates[order[i]];
    bool dominated = false;
    for (const Candidate& other : candidates)
      dominated = dominated || (other.buckets < c.buckets && other.fast_seconds <= c.fast_seconds * (1 + 1e-6));
    if (dominated || !within_margin(c)) continue;
    to_verify.push_back(order[i]);
    ++taken;
  }

  CatchInterrupt();
  const int jobs = args.jobs > 0 ? static_cast<int>(args.jobs) : AvailableCores();
  Progress progress(fmt::format("verifying with {}", args.engine), to_verify.size());
  EvaluationOptions options;
  options.jobs = jobs;
  options.time_budget = args.time_budget;
  options.start_seconds = start;
  options.progress = args.json ? nullptr : &progress;
  options.name = [&](size_t i) { return Describe(candidates[to_verify[i]].setting); };
  options.best = [&](const std::vector<ChildJobResult>& results) {
    double best = 0;
    for (const auto& r : results)
      if (r.status == ChildJobResult::Status::kOk) {
        const double t = nlohmann::json::parse(r.output).at("step_seconds").get<double>();
        if (best == 0 || t < best) best = t;
      }
    return best > 0 ? fmt::format("{:.5g} s", best) : std::string("-");
  };
  const double verify_start = SteadySeconds();
  const auto results = EvaluateEverywhere(
      to_verify.size(),
      [&](size_t i) {
        RunSpec variant = run;
        SettingOf(variant.parallel.comm_fusion, op) = candidates[to_verify[i]].setting;
        return EvaluateRun(Relower(prepared, variant), ParseEngine(args.engine)).dump();
      },
      options, world);
  progress.Finish();
  if (!world.root()) return 0;
  const double verify_seconds = SteadySeconds() - verify_start;
  for (size_t i = 0; i < to_verify.size(); ++i) {
    Candidate& c = candidates[to_verify[i]];
    c.verification = results[i];
    if (c.Verified()) c.result = nlohmann::json::parse(results[i].output);
  }

  // The winner: the best verified candidate (the fast model's best if none
  // ran). A candidate must beat the earlier ones (MindSpore's defaults come
  // first) by more than rounding to take their place.
  const double kTie = 1e-6;
  size_t winner = 0;
  bool any_verified = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (!c.Verified()) continue;
    if (!any_verified || c.VerifiedSeconds() < candidates[winner].VerifiedSeconds() * (1 - kTie)) winner = i;
    any_verified = true;
  }
  if (!any_verified)
    for (size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].fast_seconds < candidates[winner].fast_seconds * (1 - kTie)) winner = i;
  const Candidate& best = candidates[winner];
  // The gradient stream with the winner (AllGathers run at the step's start, off this stream).
  const FusionEstimate winner_estimate = op == Collective::kAllGather
                                             ? Estimate(problem, Collective::kAllReduce, problem.allreduce)
                                             : Estimate(problem, op, best.setting);
  const double default_seconds =
      candidates[0].Verified() ? candidates[0].VerifiedSeconds() : candidates[0].fast_seconds;
  const double winner_seconds = any_verified ? best.VerifiedSeconds() : best.fast_seconds;

  if (!args.out_file.empty()) WriteTunedRun(args.run_file, args.out_file, op, best.setting);
  if (!args.plot_file.empty()) {
    LineChart chart;
    chart.title = fmt::format("{}: {} fusion", run.name, args.op);
    chart.x_label = "gradient collectives per step (critical stage)";
    chart.y_label = "step time (s)";
    ChartSeries model{"fast model", {}, "#1f77b4", true}, verified{args.engine, {}, "#d62728", false};
    for (auto [k, t] : curve) model.points.emplace_back(static_cast<double>(k), t);
    for (const Candidate& c : candidates)
      if (c.Verified())
        verified.points.emplace_back(static_cast<double>(c.result.at("gradient_collectives").get<size_t>()),
                                     c.VerifiedSeconds());
    chart.series = {model, verified};
    WriteFileAtomically(args.plot_file, RenderSvg(chart));
  }

  nlohmann::json out;
  out["run"] = run.name;
  out["op"] = args.op;
  out["mode"] = mode;
  out["engine"] = args.engine;
  out["gradients"] = gradients;
  out["search_seconds"] = search_seconds;
  out["verify_seconds"] = verify_seconds;
  out["interrupted"] = Interrupted();
  out["candidates"] = nlohmann::json::array();
  for (const Candidate& c : candidates) {
    nlohmann::json j = {{"kind", c.kind},
                        {"setting", Describe(c.setting)},
                        {"config", SettingJson(c.setting)},
                        {"current", c.current},
                        {"buckets", c.buckets},
                        {"fast_step_seconds", c.fast_seconds}};
    if (c.Verified()) j["verified"] = c.result;
    if (c.verification.status == ChildJobResult::Status::kFailed) j["error"] = c.verification.output;
    out["candidates"].push_back(j);
  }
  out["winner"] = winner;
  out["default_step_seconds"] = default_seconds;
  out["winner_step_seconds"] = winner_seconds;
  out["timeline"] = {{"stage", winner_estimate.critical_stage}, {"buckets", nlohmann::json::array()}};
  for (const auto& b : winner_estimate.buckets)
    out["timeline"]["buckets"].push_back({{"list", b.list},
                                          {"gradients", {b.begin, b.end}},
                                          {"bytes", b.bytes},
                                          {"ready", b.ready},
                                          {"start", b.start},
                                          {"finish", b.finish}});
  for (const auto& stage : problem.stages)
    if (stage.stage == winner_estimate.critical_stage) {
      out["timeline"]["backward_start"] = stage.backward_start;
      out["timeline"]["backward_end"] = stage.passes_end;
    }
  if (args.json) {
    std::cout << out.dump(2) << "\n";
    return Interrupted() ? 130 : 0;
  }

  std::cout << fmt::format("tune-fusion {}: {} fusion by {}, {} gradients{}\n", run.name, args.op, mode, gradients,
                           mode == "index" ? fmt::format(" in the split list (stage {})", list_stage) : "");
  std::cout << fmt::format("  fast model: {} candidates in {:.2f} s; {} verified with {} in {:.1f} s ({} at once{})\n",
                           candidates.size(), search_seconds, to_verify.size(), args.engine, verify_seconds, jobs,
                           world.size() > 1 ? fmt::format(", {} MPI ranks", world.size()) : "");
  if (Interrupted()) std::cout << "  interrupted: the results below are those finished before Ctrl-C\n";
  std::cout << fmt::format("\n  {:<38} {:>8} {:>12} {:>12} {:>12} {:>10}\n", "candidate", "buckets", "fast model",
                           args.engine, "exposed comm", "vs default");
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (c.kind == "tuned" && !c.Verified() && c.verification.status == ChildJobResult::Status::kNotRun) continue;
    const std::string name =
        (i == winner ? "* " : "  ") + Describe(c.setting) + (c.kind == "tuned" ? "" : " (" + c.kind + ")");
    std::string verified = "-", exposed = "-", versus = "-";
    if (c.Verified()) {
      verified = fmt::format("{:.5g} s", c.VerifiedSeconds());
      exposed = fmt::format("{:.4g} s", c.result.at("exposed_communication_seconds").get<double>());
      versus = fmt::format("{:+.2f}%", 100 * (c.VerifiedSeconds() - default_seconds) / default_seconds);
    } else if (c.verification.status == ChildJobResult::Status::kFailed) {
      verified = "failed";
    }
    std::cout << fmt::format("  {:<38} {:>8} {:>12} {:>12} {:>12} {:>10}\n", name, c.buckets,
                             fmt::format("{:.5g} s", c.fast_seconds), verified, exposed, versus);
    if (c.verification.status == ChildJobResult::Status::kFailed)
      std::cout << "      error: " << c.verification.output << "\n";
  }
  if (std::any_of(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(baselines),
                  [](const Candidate& c) { return c.verification.status == ChildJobResult::Status::kNotRun; }))
    std::cout << fmt::format(
        "  (\"-\": not verified, more than {:.0f}% behind the fast model's best; --verify-margin)\n",
        100 * args.verify_margin);
  std::cout << fmt::format("\nwinner: {} ({:.5g} s, {:+.2f}% against one bucket)\n", Describe(best.setting),
                           winner_seconds, 100 * (winner_seconds - default_seconds) / default_seconds);
  if (op == Collective::kAllReduce && best.setting.mode == FusionSetting::Mode::kIndex)
    std::cout << fmt::format("paste into \"parallel\": \"all_reduce_fusion_config\": [{}]\n",
                             fmt::join(best.setting.indices, ", "));
  else
    std::cout << fmt::format("paste into \"parallel\": \"comm_fusion\": {{\"{}\": {}}}\n", args.op,
                             SettingJson(best.setting).dump());
  if (op != Collective::kAllGather) std::cout << "\n" << TimelineChart(problem, winner_estimate);
  if (!args.out_file.empty()) std::cout << "wrote " << args.out_file << "\n";
  if (!args.plot_file.empty()) std::cout << "wrote " << args.plot_file << "\n";
  return Interrupted() ? 130 : 0;
}

}  // namespace shardlab::cli
