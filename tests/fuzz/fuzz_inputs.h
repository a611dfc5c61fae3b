// What the fuzz targets share: the input as text, parsed as JSON under a
// file name inside the repository (so relative references resolve as they
// would for a shipped config), and the checks on a simulated step.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/analytical/analytical_engine.h"
#include "core/config/cluster_config.h"
#include "core/cost/collective_cost.h"
#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
#include "core/util/json_reader.h"
#include "tests/fuzz/fuzz_oracle.h"

namespace shardlab::fuzz {

inline std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A path inside the repository the fuzzers were built from.
inline std::string SourcePath(const std::string& relative) { return std::string(SHARDLAB_SOURCE_DIR) + "/" + relative; }

// The input as a JSON document, or nothing when the parser refuses it (cleanly).
inline std::optional<nlohmann::json> ParseInput(const uint8_t* data, size_t size, const std::string& file) {
  nlohmann::json doc;
  if (!Accepts([&] { doc = ParseJsonText(Text(data, size), file); })) return std::nullopt;
  return doc;
}

inline bool FiniteNonNegative(double v) { return std::isfinite(v) && v >= 0; }

// An accepted cluster prices every collective on `size` ranks `stride` apart,
// at every size, as a finite non-negative time.
inline void PriceCollectives(const ClusterSpec& cluster, int64_t size, int64_t stride) {
  const GroupPlacement group = PlaceStridedGroup(0, size, stride, cluster);
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kAllToAll, Collective::kBroadcast, Collective::kSendRecv})
    for (double bytes : {1.0, 65536.0, 1073741824.0}) {
      const double seconds = CollectiveSeconds(c, ChooseAlgorithm(c, bytes, group, cluster), bytes, group, cluster);
      Expect(FiniteNonNegative(seconds), std::string(ToString(c)) + " costs " + std::to_string(seconds) + " s");
    }
}

// A run through the whole flow (graph, strategies, plan) and one analytical
// step: an accepted run must take a finite, positive time.
inline void SimulateStep(const RunSpec& run) {
  Accepts([&] {
    const PreparedRun prepared = Prepare(run);
    const StepResult step = Summarize(prepared.plan, RunAnalytical(prepared.plan));
    Expect(std::isfinite(step.step_seconds) && step.step_seconds > 0,
           "step time " + std::to_string(step.step_seconds) + " s");
  });
}

}  // namespace shardlab::fuzz
