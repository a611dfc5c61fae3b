#include "core/plan/rank_placement.h"

#include "core/config/run_config.h"

namespace shardlab {

std::vector<int64_t> RankPlacement::StageRanks(int64_t stage) const {
  std::vector<int64_t> ranks(static_cast<size_t>(devices_per_stage));
  for (int64_t l = 0; l < devices_per_stage; ++l) ranks[static_cast<size_t>(l)] = Rank(stage, l);
  return ranks;
}

RankPlacement PlacementOf(const RunSpec& run) {
  const int64_t stages = run.parallel.pipeline_stages, devices = run.parallel.devices_per_stage();
  // With one stage, or blocks as large as a stage, tp-pp-dp numbers as the stages-outermost order does.
  if (run.stack.rank_order == RankOrder::kTpPpDp && stages > 1 && run.model.params.Int("model_parallel") < devices)
    return {stages, devices, run.model.params.Int("model_parallel")};
  return RankPlacement::Contiguous(stages, devices);
}

}  // namespace shardlab
