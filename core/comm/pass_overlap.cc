#include "core/comm/pass_overlap.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace shardlab {

bool PassOverlap::Moves(CommDimension dimension, Collective collective) const {
  const bool dimension_listed = std::find(dimensions.begin(), dimensions.end(), dimension) != dimensions.end();
  return dimension_listed &&
         (collectives.empty() || std::find(collectives.begin(), collectives.end(), collective) != collectives.end());
}

std::string PassOverlap::Describe() const {
  std::vector<std::string> names;
  if (!collectives.empty()) {
    for (Collective c : collectives) names.push_back(OperatorName(c));
  } else if (dimensions.size() == static_cast<size_t>(kCommDimensions)) {
    names.push_back("all");
  } else {
    for (CommDimension d : dimensions) names.push_back(ToString(d));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace shardlab
