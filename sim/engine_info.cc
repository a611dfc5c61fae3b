#include "sim/engine_info.h"

// simgrid/version.h needs the macros of xbt/base.h first.
// clang-format off
#include <xbt/base.h>
#include <simgrid/version.h>
// clang-format on

#include <fmt/format.h>

namespace shardlab {

std::string SimGridVersion() {
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);  // the library actually loaded, not only the headers
  return fmt::format("{}.{}.{}", major, minor, patch);
}

}  // namespace shardlab
