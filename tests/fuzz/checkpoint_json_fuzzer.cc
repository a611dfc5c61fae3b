// JSON strategy checkpoints (strategy_ckpt_load_file ending in .json).
#include "tests/fuzz/checkpoint_fuzzer.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateJsonInput)

SHARDLAB_FUZZ_TARGET(checkpoint_json) {
  shardlab::fuzz::LoadCheckpointIntoRuns(data, size, ".json");
  return 0;
}
