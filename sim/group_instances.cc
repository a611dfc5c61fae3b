#include "sim/group_instances.h"

#include <stdexcept>

#include "core/layout/device_matrix.h"

namespace shardlab::sim {

std::vector<GroupInstances> StageGroupInstances(const StageProgram& stage) {
  std::vector<int64_t> ranks(stage.devices);
  for (int64_t i = 0; i < stage.devices; ++i) ranks[i] = stage.first_rank + i;
  std::vector<GroupInstances> out;
  for (const CommGroupSpec& spec : stage.groups) {
    const DeviceMatrix matrix(spec.device_matrix, ranks);
    GroupInstances groups;
    groups.of_local.assign(stage.devices, -1);
    for (int64_t l = 0; l < stage.devices; ++l) {
      if (groups.of_local[l] >= 0) continue;
      std::vector<int64_t> members = matrix.GroupAlongDims(stage.first_rank + l, spec.dims);
      const auto instance = static_cast<int32_t>(groups.members.size());
      for (int64_t m : members) {
        if (groups.of_local[m - stage.first_rank] >= 0)
          throw std::logic_error("communication groups of a stage overlap");
        groups.of_local[m - stage.first_rank] = instance;
      }
      groups.members.push_back(std::move(members));
    }
    out.push_back(std::move(groups));
  }
  return out;
}

}  // namespace shardlab::sim
