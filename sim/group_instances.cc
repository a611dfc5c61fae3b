#include "sim/group_instances.h"

#include <stdexcept>

#include "core/layout/device_matrix.h"

namespace shardlab::sim {

std::vector<GroupInstances> StageGroupInstances(const Plan& plan, const StageProgram& stage) {
  const std::vector<int64_t> ranks = plan.StageRanks(stage.stage);
  std::vector<GroupInstances> out;
  for (const CommGroupSpec& spec : stage.groups) {
    const DeviceMatrix matrix(spec.device_matrix, ranks);
    GroupInstances groups;
    groups.of_local.assign(stage.devices, -1);
    for (int64_t l = 0; l < stage.devices; ++l) {
      if (groups.of_local[l] >= 0) continue;
      std::vector<int64_t> members = matrix.GroupAlongDims(ranks[l], spec.dims);
      const auto instance = static_cast<int32_t>(groups.members.size());
      for (int64_t m : members) {
        int32_t& of_local = groups.of_local[plan.placement.LocalOf(m)];
        if (of_local >= 0) throw std::logic_error("communication groups of a stage overlap");
        of_local = instance;
      }
      groups.members.push_back(std::move(members));
    }
    out.push_back(std::move(groups));
  }
  return out;
}

}  // namespace shardlab::sim
