// The GPU back end as the rest of shardlab sees it: four entry points into
// the module libshardlab_gpu.so (CUDA runtime, cuBLAS and NCCL; see
// gpu_module.cc). Only a process that runs on GPUs loads the module (a rank of
// `--backend nccl`, the probe that tells whether a GPU is usable, a
// measurement file's version list), so every other command starts without
// CUDA's libraries: their start-up is most of a command's fixed cost and they
// map about 230 MiB.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "exec/communicator.h"
#include "exec/runtime.h"

namespace shardlab::exec {

// Bumped whenever GpuBackend changes, so that a stale module is refused
// rather than called through the wrong table.
inline constexpr int kGpuBackendAbi = 1;

struct GpuBackend {
  int abi = kGpuBackendAbi;
  // The CUDA runtime on GPU rank % (GPUs on this machine); a synchronisation
  // waiting past `timeout` aborts the process's NCCL communicators and fails.
  std::unique_ptr<Runtime> (*make_runtime)(int rank, std::chrono::milliseconds timeout);
  // The NCCL world of `size` ranks meeting in `rendezvous_dir`, its calls
  // enqueued on the CUDA stream `stream`.
  std::unique_ptr<Communicator> (*connect_world)(int rank, int size, const std::string& rendezvous_dir,
                                                 std::chrono::milliseconds timeout, void* stream);
  // "" when a CUDA GPU is usable here, else why not, in one line.
  std::string (*device_problem)();
  // Versions of the CUDA runtime and driver, cuBLAS and NCCL.
  std::map<std::string, std::string> (*versions)();
};

// The module's exported entry point (extern "C", unmangled).
inline constexpr const char* kGpuBackendSymbol = "shardlab_gpu_backend";

// Loads the module once per process and returns its table. Looks for
// $SHARDLAB_GPU_MODULE when set, else libshardlab_gpu.so next to the running
// executable, else in the build tree it was built in. Throws, in one line
// naming the paths tried and the loader's reason, when none loads.
const GpuBackend& LoadGpuBackend();

}  // namespace shardlab::exec
