// The strategy-checkpoint targets' common body: the input, written to a file
// with the format's extension, is the strategy_ckpt_load_file of a
// semi_auto_parallel run and of an auto_parallel run; each prepared run with
// the loaded strategies must simulate to a finite, positive step time.
#pragma once

#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

#include "tests/fuzz/fuzz_inputs.h"

namespace shardlab::fuzz {

inline void LoadCheckpointIntoRuns(const uint8_t* data, size_t size, const std::string& extension) {
  static const std::vector<RunSpec> runs = [] {
    std::vector<RunSpec> r;
    for (const char* name : {"tiny-gpt-cpu-mp2-pp2", "seed-ffn-ascend-8"})
      r.push_back(LoadRunFile(SourcePath(std::string("configs/runs/") + name + ".json")));
    return r;
  }();
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shardlab-fuzz-" + std::to_string(getpid()) + "-checkpoint" + extension))
                               .string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  for (RunSpec run : runs) {
    run.parallel.strategy_ckpt_load_file = path;
    run.parallel.strategy_ckpt_save_file.clear();
    SimulateStep(run);
  }
}

}  // namespace shardlab::fuzz
