#include "core/plan/plan.h"

#include <nlohmann/json.hpp>

namespace shardlab {

int64_t Plan::RepresentativeRank(int64_t stage) const {
  const StageProgram& s = stages[stage];
  return focus_rank >= s.first_rank && focus_rank < s.first_rank + s.devices ? focus_rank : s.first_rank;
}

nlohmann::json ToJson(const MemoryBreakdown& m) {
  return {{"parameters", m.parameters},
          {"gradients", m.gradients},
          {"optimizer_states", m.optimizer_states},
          {"activations_per_micro_batch", m.activations_per_micro_batch},
          {"micro_batches_in_flight", m.micro_batches_in_flight},
          {"activations", m.activations},
          {"communication_buffers", m.communication_buffers},
          {"host", m.host},
          {"peak", m.peak},
          {"dominant", m.dominant},
          {"dominant_bytes", m.dominant_bytes}};
}

}  // namespace shardlab
