#include "core/search/fusion_tuner.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/analytical/analytical_engine.h"
#include "core/plan/lowering.h"
#include "core/report/step_result.h"
#include "core/util/atomic_file.h"
#include "core/util/input_file.h"
#include "core/util/json_reader.h"
#include "core/util/paths.h"

namespace shardlab {
namespace {

template <typename Fusion>  // CommFusion or const CommFusion
auto& SettingOf(Fusion& fusion, Collective op) {
  if (op == Collective::kAllGather) return fusion.allgather;
  if (op == Collective::kReduceScatter) return fusion.reducescatter;
  return fusion.allreduce;
}

// The fast model's step with `setting`: the closed form for gradient
// buckets; AllGathers at the step's start go through lowering and the
// analytical engine.
double FastSeconds(const RunSpec& run, const ShardedGraph& sharded, const FusionProblem& problem, Collective op,
                   const FusionSetting& setting, size_t* buckets) {
  if (op != Collective::kAllGather) {
    const FusionEstimate e = Estimate(problem, op, setting);
    *buckets = e.collectives;
    return e.step_seconds;
  }
  const Plan plan = LowerToPlan(WithFusionSetting(run, op, setting), sharded);
  const StepResult r = Summarize(plan, RunAnalytical(plan));
  *buckets = plan.stages[r.slowest_stage].step_start.size();
  return r.step_seconds;
}

void CheckTunable(const RunSpec& run, const FusionTuning& t) {
  const ParallelConfig& p = run.parallel;
  const std::string op = ToString(t.op);
  if (run.simulation.pipeline_schedule == PipelineSchedule::kDualPipe)
    throw std::runtime_error(run.file +
                             ": the fusion tuner's model is built for one model copy per stage, not dualpipe's two; "
                             "compare fusion settings with simulate --set");
  if (!p.comm_fusion.openstate)
    throw std::runtime_error(run.file +
                             ": /parallel/comm_fusion/openstate is false, so MindSpore fuses nothing; set it to true "
                             "to tune fusion");
  if (t.mode == FusionTuneMode::kIndex && t.op != Collective::kAllReduce)
    throw std::runtime_error("--mode index applies to AllReduce only; MindSpore fuses " + op + " by size");
  if (t.mode == FusionTuneMode::kIndex && p.enable_parallel_optimizer)
    throw std::runtime_error(run.file +
                             ": with enable_parallel_optimizer MindSpore ignores all_reduce_fusion_config; tune "
                             "with --mode size");
  if ((t.op == Collective::kReduceScatter || t.op == Collective::kAllGather) && !p.enable_parallel_optimizer)
    throw std::runtime_error(run.file + ": no " + op +
                             " fusion to tune: the parallel optimizer (enable_parallel_optimizer) is off");
}

// Index mode: the optimal split of the main list into k buckets, for every k.
void AddIndexCandidates(const RunSpec& run, FusionSearch& s,
                        const std::function<void(FusionCandidateKind, const FusionSetting&)>& add) {
  const auto [stage, index] = MainList(s.problem, s.tuning.op);
  if (stage < 0)
    throw std::runtime_error(run.file + ": the run has no " + ToString(s.tuning.op) + " gradients to fuse");
  const FusionList& list = s.problem.stages[stage].lists[index];
  s.gradients = list.gradients.size();
  s.list_stage = s.problem.stages[stage].stage;
  const auto splits = OptimalSplits(list, static_cast<size_t>(s.tuning.max_buckets), false);
  for (size_t k = 2; k <= splits.size(); ++k) {
    if (splits[k - 1].empty()) continue;
    FusionSetting setting;
    setting.mode = FusionSetting::Mode::kIndex;
    setting.indices = SplitIndices(splits[k - 1]);
    add(FusionCandidateKind::kTuned, setting);
  }
}

// Size mode: thresholds from 1 MB up to the largest list, every MB to 64,
// then 10% apart; the best threshold per bucket count.
void AddSizeCandidates(const RunSpec& run, const ShardedGraph& sharded, FusionSearch& s) {
  const Collective op = s.tuning.op;
  const double unit = s.problem.data_parallel ? 262144.0 : 1048576.0;
  double largest = 0;
  for (const auto& stage : s.problem.stages)
    for (const auto& list : stage.lists)
      if (list.collective == (op == Collective::kAllGather ? Collective::kReduceScatter : op)) {
        largest = std::max(largest, list.Bytes());
        s.gradients = std::max(s.gradients, list.gradients.size());
      }
  if (largest == 0) throw std::runtime_error(run.file + ": the run has no " + ToString(op) + " buckets to fuse");
  std::map<size_t, FusionCandidate> best_per_count;
  for (double mb = 1; mb <= largest / unit * 1.1 + 1; mb = mb < 64 ? mb + 1 : std::ceil(mb * 1.1)) {
    FusionCandidate c;
    c.setting.mode = FusionSetting::Mode::kSize;
    c.setting.size_mb = static_cast<int64_t>(mb);
    c.fast_seconds = FastSeconds(run, sharded, s.problem, op, c.setting, &c.buckets);
    auto it = best_per_count.find(c.buckets);
    if (it == best_per_count.end() || c.fast_seconds < it->second.fast_seconds) best_per_count[c.buckets] = c;
  }
  for (const auto& entry : best_per_count) {
    const FusionCandidate& c = entry.second;
    const bool duplicate = std::any_of(s.candidates.begin(), s.candidates.end(),
                                       [&](const FusionCandidate& other) { return other.setting == c.setting; });
    if (!duplicate) s.candidates.push_back(c);
  }
}

// The baselines always worth verifying: MindSpore's default (the reference),
// the run's own setting, and any within the margin; then the fast model's
// best tuned candidates that beat every candidate with fewer buckets (more
// buckets pay more latencies and contend more) and lie within the margin.
std::vector<size_t> ChooseToVerify(const FusionSearch& s) {
  const auto& candidates = s.candidates;
  double best_fast = candidates[0].fast_seconds;
  for (const FusionCandidate& c : candidates) best_fast = std::min(best_fast, c.fast_seconds);
  auto within_margin = [&](const FusionCandidate& c) {
    return c.fast_seconds <= best_fast * (1 + s.tuning.verify_margin);
  };
  std::vector<size_t> to_verify;
  for (size_t i = 0; i < s.baselines; ++i)
    if (candidates[i].kind == FusionCandidateKind::kDefault || candidates[i].current || within_margin(candidates[i]))
      to_verify.push_back(i);
  std::vector<size_t> order(candidates.size() - s.baselines);
  for (size_t i = 0; i < order.size(); ++i) order[i] = s.baselines + i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return candidates[a].fast_seconds < candidates[b].fast_seconds; });
  for (size_t i = 0, taken = 0; i < order.size() && taken < static_cast<size_t>(s.tuning.verify); ++i) {
    const FusionCandidate& c = candidates[order[i]];
    bool dominated = false;
    for (const FusionCandidate& other : candidates)
      dominated = dominated || (other.buckets < c.buckets && other.fast_seconds <= c.fast_seconds * (1 + 1e-6));
    if (dominated || !within_margin(c)) continue;
    to_verify.push_back(order[i]);
    ++taken;
  }
  return to_verify;
}

}  // namespace

const char* ToString(FusionTuneMode mode) { return mode == FusionTuneMode::kIndex ? "index" : "size"; }

const char* ToString(FusionCandidateKind kind) {
  switch (kind) {
    case FusionCandidateKind::kDefault:
      return "default";
    case FusionCandidateKind::kAuto:
      return "auto";
    case FusionCandidateKind::kUnfused:
      return "unfused";
    case FusionCandidateKind::kCurrent:
      return "current";
    case FusionCandidateKind::kTuned:
      return "tuned";
  }
  return "";
}

FusionTuneMode DefaultFusionTuneMode(const RunSpec& run, Collective op) {
  return op == Collective::kAllReduce && !run.parallel.enable_parallel_optimizer ? FusionTuneMode::kIndex
                                                                                 : FusionTuneMode::kSize;
}

RunSpec WithFusionSetting(RunSpec run, Collective op, const FusionSetting& setting) {
  SettingOf(run.parallel.comm_fusion, op) = setting;
  return run;
}

FusionSearch SearchFusion(const RunSpec& run, const ShardedGraph& sharded, const FusionTuning& tuning) {
  CheckTunable(run, tuning);
  FusionSearch s;
  s.tuning = tuning;
  s.problem = BuildFusionProblem(run, sharded);
  auto add = [&](FusionCandidateKind kind, const FusionSetting& setting) {
    for (FusionCandidate& c : s.candidates)
      if (c.setting == setting) {
        c.current = c.current || kind == FusionCandidateKind::kCurrent;
        return;
      }
    FusionCandidate c;
    c.kind = kind;
    c.setting = setting;
    c.current = kind == FusionCandidateKind::kCurrent;
    c.fast_seconds = FastSeconds(run, sharded, s.problem, tuning.op, setting, &c.buckets);
    s.candidates.push_back(std::move(c));
  };
  FusionSetting setting;
  add(FusionCandidateKind::kDefault, setting);
  setting.mode = FusionSetting::Mode::kAuto;
  add(FusionCandidateKind::kAuto, setting);
  setting.mode = FusionSetting::Mode::kSize;
  setting.size_mb = 0;
  add(FusionCandidateKind::kUnfused, setting);
  add(FusionCandidateKind::kCurrent, SettingOf(run.parallel.comm_fusion, tuning.op));
  s.baselines = s.candidates.size();
  if (tuning.mode == FusionTuneMode::kIndex)
    AddIndexCandidates(run, s, add);
  else
    AddSizeCandidates(run, sharded, s);
  for (const FusionCandidate& c : s.candidates)
    if (!s.curve.count(c.buckets) || c.fast_seconds < s.curve[c.buckets]) s.curve[c.buckets] = c.fast_seconds;
  s.to_verify = ChooseToVerify(s);
  return s;
}

size_t ChooseFusionWinner(const std::vector<FusionCandidate>& candidates,
                          const std::vector<std::optional<double>>& verified) {
  const double kTie = 1e-6;
  size_t winner = 0;
  bool any_verified = false;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!verified[i]) continue;
    if (!any_verified || *verified[i] < *verified[winner] * (1 - kTie)) winner = i;
    any_verified = true;
  }
  if (!any_verified)
    for (size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].fast_seconds < candidates[winner].fast_seconds * (1 - kTie)) winner = i;
  return winner;
}

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

nlohmann::ordered_json FusionSettingJson(const FusionSetting& s) {
  switch (s.mode) {
    case FusionSetting::Mode::kDefault:
    case FusionSetting::Mode::kAuto:
      return {{"mode", "auto"}, {"config", nullptr}};
    case FusionSetting::Mode::kSize:
      return {{"mode", "size"}, {"config", s.size_mb}};
    case FusionSetting::Mode::kIndex:
      return {{"mode", "index"}, {"config", s.indices}};
  }
  return {};
}

void WriteTunedRunFile(const std::string& in, const std::vector<std::string>& settings, const std::string& out,
                       Collective op, const FusionSetting& s) {
  const std::string text = ReadInputFile(in);
  ParseJsonText(text, in);                                           // reports a malformed file with its position
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text);  // keeps the author's key order
  ApplySettings(doc, settings);
  auto& parallel = doc["parallel"];
  const std::string key = ToString(op);
  const bool has_comm_fusion_entry = parallel.contains("comm_fusion") && parallel["comm_fusion"].contains(key);
  auto drop_comm_fusion_entry = [&] {
    if (!parallel.contains("comm_fusion")) return;
    parallel["comm_fusion"].erase(key);
    if (parallel["comm_fusion"].empty()) parallel.erase("comm_fusion");
  };
  if (op == Collective::kAllReduce) {
    // Index splits go to all_reduce_fusion_config unless comm_fusion already holds the key.
    const bool as_list = s.mode == FusionSetting::Mode::kIndex && !has_comm_fusion_entry;
    if (as_list)
      parallel["all_reduce_fusion_config"] = s.indices;
    else
      parallel.erase("all_reduce_fusion_config");
    if (as_list || s.mode == FusionSetting::Mode::kDefault)
      drop_comm_fusion_entry();
    else
      parallel["comm_fusion"][key] = FusionSettingJson(s);
  } else if (s.mode == FusionSetting::Mode::kDefault) {
    if (parallel.contains("comm_fusion")) parallel["comm_fusion"].erase(key);
  } else {
    parallel["comm_fusion"][key] = FusionSettingJson(s);
  }
  for (const char* k : {"cluster", "model"})
    if (doc.contains(k) && doc[k].is_string()) doc[k] = RebaseRelative(doc[k].get<std::string>(), in, out);
  for (const char* k : {"strategy_ckpt_load_file", "strategy_ckpt_save_file"})
    if (parallel.contains(k) && parallel[k].is_string())
      parallel[k] = RebaseRelative(parallel[k].get<std::string>(), in, out);
  if (doc.contains("ascend_config") && doc["ascend_config"].is_object()) {
    auto& speed_up = doc["ascend_config"]["parallel_speed_up_json_path"];
    if (speed_up.is_string() && !speed_up.get<std::string>().empty())
      speed_up = RebaseRelative(speed_up.get<std::string>(), in, out);
    else if (speed_up.is_null())
      doc["ascend_config"].erase("parallel_speed_up_json_path");
  }
  WriteFileAtomically(out, doc.dump(2) + "\n");
}

}  // namespace shardlab
