// Calibration files (`shardlab calibrate` output, `--calibration` input),
// applied to a shipped cluster of each kind: the calibrated cluster must still
// price every collective as a finite non-negative time.
#include <algorithm>

#include "core/config/calibration_file.h"
#include "tests/fuzz/fuzz_inputs.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateJsonInput)

SHARDLAB_FUZZ_TARGET(calibration) {
  using namespace shardlab;
  using namespace shardlab::fuzz;
  static const std::vector<ClusterSpec> clusters = [] {
    std::vector<ClusterSpec> c;
    for (const char* name : {"dgx-h100-ndr", "ascend910-atlas900", "localhost-cpu"}) {
      const std::string path = SourcePath(std::string("configs/clusters/") + name + ".json");
      const nlohmann::json doc = ReadJsonFile(path);
      c.push_back(ReadClusterSpec(JsonNode(doc, path)));
    }
    return c;
  }();
  const std::string file = SourcePath("configs/calibration/fuzz-calibration.json");
  const auto doc = ParseInput(data, size, file);
  if (!doc) return 0;
  Calibration calibration;
  if (!Accepts([&] { calibration = ReadCalibration(JsonNode(*doc, file)); })) return 0;
  for (ClusterSpec cluster : clusters) {
    if (!Accepts([&] { ApplyCalibration(calibration, file, &cluster); })) continue;
    PriceCollectives(cluster, std::min<int64_t>(cluster.devices_per_server, 8), 1);
    if (cluster.servers > 1)
      PriceCollectives(cluster, std::min<int64_t>(cluster.servers, 8), cluster.devices_per_server);
  }
  return 0;
}
