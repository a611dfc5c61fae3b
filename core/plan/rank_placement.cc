#include "core/plan/rank_placement.h"

#include "core/config/run_config.h"

namespace shardlab {

RankPlacement PlacementOf(const RunSpec& run) {
  const int64_t stages = run.parallel.pipeline_stages, devices = run.parallel.devices_per_stage();
  if (run.stack.rank_order == RankOrder::kTpPpDp) return {stages, devices, run.model.params.Int("model_parallel")};
  return RankPlacement::Contiguous(stages, devices);
}

}  // namespace shardlab
