// The gradient-fusion tuner behind `shardlab tune-fusion`: for one
// collective's fusion (all_reduce_fusion_config split indices, or a
// comm_fusion size threshold) it lists MindSpore's defaults, the run's own
// setting and the fast model's candidates (core/search/fusion_model.h:
// exactly optimal splits per bucket count by dynamic programming, or one
// threshold per bucket count), picks those worth verifying with a full
// engine, and, once they are verified, the winner. Simulating the verified
// candidates is the caller's (one child process each); writing the winner
// back is WriteTunedRunFile.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/comm/collective.h"
#include "core/config/parallel_config.h"
#include "core/config/run_config.h"
#include "core/ops/sharded_graph.h"
#include "core/search/fusion_model.h"

namespace shardlab {

// How the setting is tuned: split indices (AllReduce without the parallel
// optimizer) or a size threshold.
enum class FusionTuneMode { kIndex, kSize };
const char* ToString(FusionTuneMode mode);

enum class FusionCandidateKind {
  kDefault,  // nothing configured: one bucket (MindSpore's default, the reference)
  kAuto,     // "auto": the 64 MB threshold
  kUnfused,  // size 0: one collective per gradient
  kCurrent,  // the run's own setting
  kTuned,    // proposed by the fast model
};
const char* ToString(FusionCandidateKind kind);

struct FusionCandidate {
  FusionCandidateKind kind = FusionCandidateKind::kTuned;
  FusionSetting setting;
  bool current = false;  // the run's own setting (under whichever kind listed it first)
  double fast_seconds = 0;
  size_t buckets = 0;  // on the critical stage, in the fast model
};

struct FusionTuning {
  Collective op = Collective::kAllReduce;
  FusionTuneMode mode = FusionTuneMode::kIndex;
  int64_t max_buckets = 32;    // index mode: the most buckets tried
  int64_t verify = 6;          // tuned candidates verified, besides the baselines
  double verify_margin = 0.1;  // only candidates within this fraction of the fast model's best
};

struct FusionSearch {
  FusionTuning tuning;
  FusionProblem problem;
  // The baselines first (default, auto, unfused, current: duplicates merged), then the tuned ones.
  std::vector<FusionCandidate> candidates;
  size_t baselines = 0;
  std::map<size_t, double> curve;  // the fast model's best step per bucket count
  size_t gradients = 0;            // in the tuned list (index) or the largest list (size)
  int64_t list_stage = 0;          // index mode: the stage whose list is split
  std::vector<size_t> to_verify;   // candidates worth a full simulation, in order
};

// `mode` absent: index for AllReduce unless the parallel optimizer is on,
// else size. Throws std::runtime_error (naming the run file) when the run
// has nothing of `op` to fuse or the mode does not apply, as MindSpore would
// ignore the key.
FusionTuneMode DefaultFusionTuneMode(const RunSpec& run, Collective op);
FusionSearch SearchFusion(const RunSpec& run, const ShardedGraph& sharded, const FusionTuning& tuning);

// The run with `setting` as its fusion of `op`.
RunSpec WithFusionSetting(RunSpec run, Collective op, const FusionSetting& setting);

// The winner: the best verified candidate (`verified[i]`: candidate i's
// simulated step), the fast model's best when none was verified. A
// candidate must beat the earlier ones (MindSpore's defaults come first) by
// more than rounding to take their place.
size_t ChooseFusionWinner(const std::vector<FusionCandidate>& candidates,
                          const std::vector<std::optional<double>>& verified);

// "one bucket", "size 32 MB", "index [3, 9, 17]", ...
std::string Describe(const FusionSetting& setting);
// The comm_fusion entry MindSpore reads: {"mode": ..., "config": ...}.
nlohmann::ordered_json FusionSettingJson(const FusionSetting& setting);

// Writes the run file `in` to `out` with the `--set` settings it was tuned
// with applied and the tuned key changed (and relative paths rebased when
// `out` lives in another folder), keeping the author's key order; atomically.
void WriteTunedRunFile(const std::string& in, const std::vector<std::string>& settings, const std::string& out,
                       Collective op, const FusionSetting& setting);

}  // namespace shardlab
