// The CUDA runtime: the executor's streams as CUDA streams, events as CUDA
// events, GEMMs as cuBLAS bfloat16 products with float32 accumulation
// (tensor cores), memory-bound operators as device-to-device copies. A
// synchronisation that waits past the timeout aborts the process's NCCL
// communicators (ncclCommAbort) and fails, so that a hang becomes an error.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "exec/runtime.h"

namespace shardlab::exec {

// On GPU rank % (GPUs on this machine).
std::unique_ptr<Runtime> MakeCudaRuntime(int rank, std::chrono::milliseconds timeout = std::chrono::minutes(2));

// "" when a CUDA GPU is usable here, else why not, in one line.
std::string CudaDeviceProblem();

// Versions of the CUDA runtime and driver, cuBLAS and NCCL.
std::map<std::string, std::string> CudaVersions();

}  // namespace shardlab::exec
