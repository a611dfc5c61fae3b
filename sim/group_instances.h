// The instances of a stage's communication groups: for each group spec of the
// stage (StageProgram::groups), the instance each of its devices belongs to
// and every instance's members, stored once per instance.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/plan.h"

namespace shardlab::sim {

struct GroupInstances {
  std::vector<int32_t> of_local;              // per device of the stage, by local index
  std::vector<std::vector<int64_t>> members;  // per instance: ranks, in group order

  const std::vector<int64_t>& MembersOf(int64_t local) const { return members[of_local[local]]; }
};

// One entry per group spec of `stage`, a stage of `plan`.
std::vector<GroupInstances> StageGroupInstances(const Plan& plan, const StageProgram& stage);

}  // namespace shardlab::sim
