// Which of a pass's blocking collectives run on a side stream beside the
// compute of the pass it is paired with, when a schedule runs a forward and
// the backward of another micro-batch together (simulation's
// overlap_forward_backward names dimensions; MindSpore's pp_1f1b_overlap
// names operator types, whatever dimension they serve).
#pragma once

#include <string>
#include <vector>

#include "core/comm/collective.h"

namespace shardlab {

struct PassOverlap {
  std::vector<CommDimension> dimensions;  // sorted; empty: forwards and backwards run one at a time
  std::vector<Collective> collectives;    // sorted; empty: every kind of the listed dimensions

  bool empty() const { return dimensions.empty(); }
  // Whether a collective of this dimension and kind runs beside the other pass.
  bool Moves(CommDimension dimension, Collective collective) const;
  // "expert", "all", "AllGather, AlltoAll" ...: what goes beside the other pass, for reports.
  std::string Describe() const;
  bool operator==(const PassOverlap&) const = default;
};

}  // namespace shardlab
