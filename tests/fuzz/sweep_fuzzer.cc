// Sweep files: the grid, its keys checked against the base run, and the run
// document of the first points as `shardlab sweep` would simulate them.
#include <algorithm>

#include "core/config/run_config.h"
#include "core/config/sweep_config.h"
#include "tests/fuzz/fuzz_inputs.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateJsonInput)

SHARDLAB_FUZZ_TARGET(sweep) {
  using namespace shardlab;
  using namespace shardlab::fuzz;
  const std::string file = SourcePath("configs/sweeps/fuzz-sweep.json");
  const auto doc = ParseInput(data, size, file);
  if (!doc) return 0;
  SweepSpec spec;
  nlohmann::json base;
  if (!Accepts([&] {
        spec = ReadSweepSpec(JsonNode(*doc, file));
        base = ReadJsonFile(spec.run_file);
        CheckGridKeys(spec, base);
      }))
    return 0;
  Expect(spec.point_count() >= 1 && spec.point_count() <= kMaxSweepPoints, "grid size out of range");
  for (size_t i = 0; i < std::min<size_t>(spec.point_count(), 3); ++i)
    Accepts([&] {
      const nlohmann::json point = spec.PointRun(base, i);
      ReadRunSpec(JsonNode(point, spec.run_file));
      spec.PointName(i);
    });
  return 0;
}
