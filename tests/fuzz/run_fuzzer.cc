// Run files through the whole flow: the run as a user writes it (cluster and
// model by path, resolved from configs/runs, or inline), then its graph,
// strategies, plan and one analytical step. An accepted run must give a
// finite, positive step time; a checkpoint it asks to save goes to /tmp.
#include <filesystem>

#include "tests/fuzz/fuzz_inputs.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateJsonInput)

SHARDLAB_FUZZ_TARGET(run) {
  using namespace shardlab;
  using namespace shardlab::fuzz;
  const std::string file = SourcePath("configs/runs/fuzz-run.json");
  const auto doc = ParseInput(data, size, file);
  if (!doc) return 0;
  RunSpec run;
  if (!Accepts([&] { run = ReadRunSpec(JsonNode(*doc, file)); })) return 0;
  std::string& save = run.parallel.strategy_ckpt_save_file;
  if (!save.empty())
    save = (std::filesystem::temp_directory_path() /
            ("shardlab-fuzz-save" + std::filesystem::path(save).extension().string()))
               .string();
  SimulateStep(run);
  return 0;
}
