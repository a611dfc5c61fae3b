// The order in which a pipeline stage runs its forward and backward passes:
// GPipe (all forwards, then all backwards), 1F1B (MindSpore's default: S-s
// warm-up forwards on stage s, then one backward and one forward alternately,
// then the remaining backwards) and interleaved 1F1B over virtual chunks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/simulation_options.h"

namespace shardlab {

struct ScheduleItem {
  bool forward = true;
  int64_t micro_batch = 0;
  int64_t chunk = 0;  // virtual stage chunk (interleaved); the virtual stage is chunk * stages + stage
};

std::vector<ScheduleItem> StageSchedule(PipelineSchedule schedule, int64_t stage, int64_t stages,
                                        int64_t micro_batches, int64_t chunks);

}  // namespace shardlab
