// MindSpore's protobuf strategy checkpoints (strategy_ckpt_load_file ending
// in .ckpt), mutated field by field through their decoded form.
#include "tests/fuzz/checkpoint_fuzzer.h"
#include "tests/fuzz/fuzz_target.h"

SHARDLAB_FUZZ_MUTATOR(MutateStrategyMapInput)

SHARDLAB_FUZZ_TARGET(checkpoint_proto) {
  shardlab::fuzz::LoadCheckpointIntoRuns(data, size, ".ckpt");
  return 0;
}
