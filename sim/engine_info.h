// Facts about the SimGrid engine shardlab is linked against.
#pragma once

#include <string>

namespace shardlab {

// "3.32.0": the version of the SimGrid library loaded at run time.
std::string SimGridVersion();

}  // namespace shardlab
