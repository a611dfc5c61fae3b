#include "core/plan/plan.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/util/enum_names.h"

namespace shardlab {
namespace {

constexpr EnumNames<CommDimension, kCommDimensions> kDimensions({"tensor", "data", "pipeline", "expert", "context"});

}  // namespace

const char* ToString(CommDimension dimension) { return kDimensions[dimension]; }

CommDimension ParseCommDimension(const std::string& name) { return kDimensions.Parse(name, "communication dimension"); }

double StageProgram::FirstForwardStart() const {
  double end = 0, start = 0;
  for (const Task& gather : step_start) {
    end += gather.seconds;
    start = std::max(start, end - gather.lead_seconds);
  }
  return start;
}

bool StageProgram::GathersOverlapForward() const {
  return std::any_of(step_start.begin(), step_start.end(), [](const Task& t) { return t.lead_seconds > 0; });
}

int64_t Plan::RepresentativeRank(int64_t stage) const {
  const StageProgram& s = stages[stage];
  return focus_rank >= s.first_rank && focus_rank < s.first_rank + s.devices ? focus_rank : s.first_rank;
}

nlohmann::json ToJson(const MemoryBreakdown& m) {
  return {{"parameters", m.parameters},
          {"gathered_weights", m.gathered_weights},
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

int64_t TaskRunsPerStep(const Plan& plan) {
  int64_t runs = 0;
  for (const StageProgram& stage : plan.stages)
    runs += static_cast<int64_t>(stage.forward.size() + stage.backward.size()) * plan.micro_batches;
  return runs;
}

void CheckTaskRuns(const Plan& plan, int64_t limit, const std::string& engine, const std::string& cost) {
  const int64_t runs = TaskRunsPerStep(plan);
  if (runs <= limit) return;
  int64_t largest = 0;
  for (const StageProgram& stage : plan.stages)
    largest = std::max(largest, static_cast<int64_t>(stage.forward.size() + stage.backward.size()));
  throw std::runtime_error(fmt::format(
      "this step would run {} tasks ({} stage{} x {} micro-batch{} x up to {} tasks each), more than the {} engine's "
      "limit of {} ({}): lower micro_batch_num or the model's size",
      runs, plan.stages.size(), plan.stages.size() == 1 ? "" : "s", plan.micro_batches,
      plan.micro_batches == 1 ? "" : "es", largest, engine, limit, cost));
}

}  // namespace shardlab
