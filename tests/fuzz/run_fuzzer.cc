// Run files through the whole flow: the run as a user writes it (cluster and
// model by path, resolved from configs/runs, or inline), then its graph,
// strategies, plan and one analytical step. An accepted run must give a
// finite, positive step time; a checkpoint it asks to save goes to /tmp.
#include <filesystem>

#include "core/analytical/analytical_engine.h"
#include "core/flow/prepared_run.h"
#include "core/report/step_result.h"
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
  Accepts([&] {
    const PreparedRun prepared = Prepare(run);
    const StepResult step = Summarize(prepared.plan, RunAnalytical(prepared.plan));
    Expect(std::isfinite(step.step_seconds) && step.step_seconds > 0,
           "step time " + std::to_string(step.step_seconds) + " s");
  });
  return 0;
}
