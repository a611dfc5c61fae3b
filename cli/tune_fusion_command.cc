// `shardlab tune-fusion RUN.json`: searches all_reduce_fusion_config split
// indices (or a comm_fusion size threshold) that minimise the simulated step.
// The tuner (core/search/fusion_tuner.h) lists the candidates and those worth
// verifying; this command verifies them with the full engine (one child
// process each, on every core, or across `mpirun` ranks), prints the table,
// the winner's bucket timeline and chart, and writes the tuned run file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/run_evaluation.h"
#include "core/config/units.h"
#include "core/flow/prepared_run.h"
#include "core/report/svg_chart.h"
#include "core/search/fusion_tuner.h"
#include "core/util/atomic_file.h"
#include "core/util/interrupt.h"

namespace shardlab::cli {
namespace {

// A candidate with its verification by the full engine.
struct Verified {
  ChildJobResult run;
  nlohmann::json result;  // the verified step, when it ran
  bool Ok() const { return run.status == ChildJobResult::Status::kOk; }
  double Seconds() const { return result.at("step_seconds").get<double>(); }
};

// The winner's buckets on the critical stage, drawn over the last backward pass.
std::string TimelineChart(const FusionProblem& problem, const FusionEstimate& estimate) {
  const FusionStage* stage = nullptr;
  for (const auto& s : problem.stages)
    if (s.stage == estimate.critical_stage) stage = &s;
  if (!stage || estimate.buckets.empty()) return "";
  double end = stage->last().end;
  for (const auto& b : estimate.buckets) end = std::max(end, b.finish);
  const double begin = std::min(stage->last().start, estimate.buckets.front().ready);
  const int width = 64;
  auto col = [&](double t) {
    return std::clamp(static_cast<int>(std::lround((t - begin) / (end - begin) * width)), 0, width);
  };
  // Buckets alternate '#' and '=' so that neighbours stay apart; wide ones carry their number.
  std::string backward(width + 1, ' '), stream(width + 1, ' '), ready(width + 1, ' ');
  for (int c = col(stage->last().start); c < col(stage->last().end); ++c) backward[c] = '=';
  for (size_t i = 0; i < estimate.buckets.size(); ++i) {
    const auto& b = estimate.buckets[i];
    const int a = col(b.start), z = std::min(std::max(col(b.finish), a + 1), width + 1);
    for (int c = a; c < z; ++c) stream[c] = i % 2 ? '=' : '#';
    const std::string label = std::to_string(i + 1);
    if (z - a >= static_cast<int>(label.size()) + 2) stream.replace(a + 1, label.size(), label);
    ready[col(b.ready)] = '^';
  }
  std::string out = fmt::format("last backward pass of stage {} with the winner ({} .. {}):\n", stage->stage,
                                FormatQuantity(begin, Quantity::kSeconds), FormatQuantity(end, Quantity::kSeconds));
  out += "  backward compute |" + backward + "\n";
  out += "  bucket stream    |" + stream + "\n";
  out += "  bucket ready     |" + ready + "\n";
  out += fmt::format("  tail past the backward pass: {} over {} collective{}\n",
                     FormatQuantity(estimate.tail_seconds, Quantity::kSeconds), estimate.buckets.size(),
                     estimate.buckets.size() == 1 ? "" : "s");
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
  const RunSpec run = LoadRunFile(args.run_file, args.settings);
  FusionTuning tuning;
  tuning.op = ParseCollective(args.op);
  const Collective op = tuning.op;
  tuning.mode = args.mode.empty()      ? DefaultFusionTuneMode(run, op)
                : args.mode == "index" ? FusionTuneMode::kIndex
                                       : FusionTuneMode::kSize;
  tuning.max_buckets = args.max_buckets;
  tuning.verify = args.verify;
  tuning.verify_margin = args.verify_margin;
  const PreparedRun prepared = Prepare(run);
  const FusionSearch search = SearchFusion(run, prepared.sharded, tuning);
  const std::vector<FusionCandidate>& candidates = search.candidates;
  const std::vector<size_t>& to_verify = search.to_verify;
  const FusionProblem& problem = search.problem;
  const double search_seconds = SteadySeconds() - start;

  StopOnInterrupt();
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
    return best > 0 ? FormatQuantity(best, Quantity::kSeconds) : std::string("-");
  };
  const double verify_start = SteadySeconds();
  const auto results = EvaluateEverywhere(
      to_verify.size(),
      [&](size_t i) {
        const RunSpec variant = WithFusionSetting(run, op, candidates[to_verify[i]].setting);
        return EvaluateRun(Relower(prepared, variant), ParseEngine(args.engine)).dump();
      },
      options, world);
  progress.Finish();
  if (!world.root()) return 0;
  const double verify_seconds = SteadySeconds() - verify_start;
  std::vector<Verified> verified(candidates.size());
  std::vector<std::optional<double>> verified_seconds(candidates.size());
  for (size_t i = 0; i < to_verify.size(); ++i) {
    Verified& v = verified[to_verify[i]];
    v.run = results[i];
    if (v.Ok()) {
      v.result = nlohmann::json::parse(results[i].output);
      verified_seconds[to_verify[i]] = v.Seconds();
    }
  }
  const size_t winner = ChooseFusionWinner(candidates, verified_seconds);
  const bool any_verified = std::any_of(verified.begin(), verified.end(), [](const Verified& v) { return v.Ok(); });
  const FusionCandidate& best = candidates[winner];
  // The gradient stream with the winner (AllGathers run at the step's start, off this stream).
  const FusionEstimate winner_estimate = op == Collective::kAllGather
                                             ? Estimate(problem, Collective::kAllReduce, problem.allreduce)
                                             : Estimate(problem, op, best.setting);
  const double default_seconds = verified[0].Ok() ? verified[0].Seconds() : candidates[0].fast_seconds;
  const double winner_seconds = any_verified ? verified[winner].Seconds() : best.fast_seconds;

  if (!args.out_file.empty()) WriteTunedRunFile(args.run_file, args.settings, args.out_file, op, best.setting);
  if (!args.plot_file.empty()) {
    LineChart chart;
    chart.title = fmt::format("{}: {} fusion", run.name, args.op);
    chart.x_label = "gradient collectives per step (critical stage)";
    chart.y_label = "step time (s)";
    ChartSeries model{"fast model", {}, "#1f77b4", true}, engine{args.engine, {}, "#d62728", false};
    for (auto [k, t] : search.curve) model.points.emplace_back(static_cast<double>(k), t);
    for (const Verified& v : verified)
      if (v.Ok())
        engine.points.emplace_back(static_cast<double>(v.result.at("gradient_collectives").get<size_t>()), v.Seconds());
    chart.series = {model, engine};
    WriteFileAtomically(args.plot_file, RenderSvg(chart));
  }

  nlohmann::json out;
  out["run"] = run.name;
  out["op"] = args.op;
  out["mode"] = ToString(tuning.mode);
  out["engine"] = args.engine;
  out["gradients"] = search.gradients;
  out["search_seconds"] = search_seconds;
  out["verify_seconds"] = verify_seconds;
  out["interrupted"] = StopRequested();
  out["candidates"] = nlohmann::json::array();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const FusionCandidate& c = candidates[i];
    nlohmann::json j = {
        {"kind", ToString(c.kind)}, {"setting", Describe(c.setting)}, {"config", FusionSettingJson(c.setting)},
        {"current", c.current},     {"buckets", c.buckets},           {"fast_step_seconds", c.fast_seconds}};
    if (verified[i].Ok()) j["verified"] = verified[i].result;
    if (verified[i].run.status == ChildJobResult::Status::kFailed) j["error"] = verified[i].run.output;
    out["candidates"].push_back(j);
  }
  out["winner"] = winner;
  out["winner_setting"] = FusionSettingJson(best.setting);
  out["winner_buckets"] = candidates[winner].buckets;
  if (verified[winner].Ok())
    out["winner_exposed_communication_seconds"] = verified[winner].result.at("exposed_communication_seconds");
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
      out["timeline"]["backward_start"] = stage.last().start;
      out["timeline"]["backward_end"] = stage.last().end;
    }
  if (args.json) {
    std::cout << out.dump(2) << "\n";
    return StopRequested() ? StopExitCode() : 0;
  }

  std::cout << fmt::format(
      "tune-fusion {}: {} fusion by {}, {} gradients{}\n", run.name, args.op, ToString(tuning.mode), search.gradients,
      tuning.mode == FusionTuneMode::kIndex ? fmt::format(" in the split list (stage {})", search.list_stage) : "");
  std::cout << fmt::format("  fast model: {} candidates in {}; {} verified with {} in {} ({} at once{})\n",
                           candidates.size(), FormatQuantity(search_seconds, Quantity::kSeconds), to_verify.size(),
                           args.engine, FormatQuantity(verify_seconds, Quantity::kSeconds), jobs,
                           world.size() > 1 ? fmt::format(", {} MPI ranks", world.size()) : "");
  if (StopRequested()) std::cout << "  interrupted: the results below are those finished before Ctrl-C\n";
  std::cout << fmt::format("\n  {:<38} {:>8} {:>12} {:>12} {:>12} {:>10}\n", "candidate", "buckets", "fast model",
                           args.engine, "exposed comm", "vs default");
  for (size_t i = 0; i < candidates.size(); ++i) {
    const FusionCandidate& c = candidates[i];
    const Verified& v = verified[i];
    const bool tuned = c.kind == FusionCandidateKind::kTuned;
    if (tuned && v.run.status == ChildJobResult::Status::kNotRun) continue;
    const std::string name =
        (i == winner ? "* " : "  ") + Describe(c.setting) + (tuned ? "" : fmt::format(" ({})", ToString(c.kind)));
    std::string seconds = "-", exposed = "-", versus = "-";
    if (v.Ok()) {
      seconds = FormatQuantity(v.Seconds(), Quantity::kSeconds);
      exposed = FormatQuantity(v.result.at("exposed_communication_seconds").get<double>(), Quantity::kSeconds);
      versus = fmt::format("{:+.2f}%", 100 * (v.Seconds() - default_seconds) / default_seconds);
    } else if (v.run.status == ChildJobResult::Status::kFailed) {
      seconds = "failed";
    }
    std::cout << fmt::format("  {:<38} {:>8} {:>12} {:>12} {:>12} {:>10}\n", name, c.buckets,
                             FormatQuantity(c.fast_seconds, Quantity::kSeconds), seconds, exposed, versus);
    if (v.run.status == ChildJobResult::Status::kFailed) std::cout << "      error: " << v.run.output << "\n";
  }
  if (std::any_of(verified.begin(), verified.begin() + static_cast<std::ptrdiff_t>(search.baselines),
                  [](const Verified& v) { return v.run.status == ChildJobResult::Status::kNotRun; }))
    std::cout << fmt::format(
        "  (\"-\": not verified, more than {:.0f}% behind the fast model's best; --verify-margin)\n",
        100 * args.verify_margin);
  std::cout << fmt::format("\nwinner: {} ({}, {:+.2f}% against one bucket)\n", Describe(best.setting),
                           FormatQuantity(winner_seconds, Quantity::kSeconds),
                           100 * (winner_seconds - default_seconds) / default_seconds);
  if (op == Collective::kAllReduce && best.setting.mode == FusionSetting::Mode::kIndex)
    std::cout << fmt::format("paste into \"parallel\": \"all_reduce_fusion_config\": [{}]\n",
                             fmt::join(best.setting.indices, ", "));
  else
    std::cout << fmt::format("paste into \"parallel\": \"comm_fusion\": {{\"{}\": {}}}\n", args.op,
                             FusionSettingJson(best.setting).dump());
  if (op != Collective::kAllGather) std::cout << "\n" << TimelineChart(problem, winner_estimate);
  if (!args.out_file.empty()) std::cout << "wrote " << args.out_file << "\n";
  if (!args.plot_file.empty()) std::cout << "wrote " << args.plot_file << "\n";
  return StopRequested() ? StopExitCode() : 0;
}

}  // namespace shardlab::cli
