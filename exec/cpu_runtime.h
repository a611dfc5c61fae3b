// The CPU runtime: one thread per stream, Eigen GEMMs (single-threaded, so a
// rank is one core's worth of work) and streaming copies for memory-bound
// operators; events are steady-clock time stamps taken on the stream threads.
#pragma once

#include <memory>

#include "exec/runtime.h"

namespace shardlab::exec {

std::unique_ptr<Runtime> MakeCpuRuntime();

// The CPU's model name (from /proc/cpuinfo), "unknown CPU" otherwise.
std::string CpuModelName();

}  // namespace shardlab::exec
