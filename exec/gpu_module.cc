// libshardlab_gpu.so's entry point: the table of gpu_backend.h over the CUDA
// runtime (cuda_runtime.cc) and the NCCL communicators (nccl_communicator.cc).
// This module is the only thing that links CUDA, cuBLAS and NCCL.
#include "exec/cuda_runtime.h"
#include "exec/gpu_backend.h"
#include "exec/nccl_communicator.h"

extern "C" __attribute__((visibility("default"))) const shardlab::exec::GpuBackend* shardlab_gpu_backend() {
  using namespace shardlab::exec;
  static const GpuBackend backend{kGpuBackendAbi, &MakeCudaRuntime, &ConnectNcclWorld, &CudaDeviceProblem,
                                  &CudaVersions};
  return &backend;
}
