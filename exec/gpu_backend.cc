#include "exec/gpu_backend.h"

#include "core/util/module_loader.h"

namespace shardlab::exec {

const GpuBackend& LoadGpuBackend() {
  const ModuleSearch search{"the GPU back end", "libshardlab_gpu.so", "SHARDLAB_GPU_MODULE", SHARDLAB_GPU_MODULE_DIR,
                            kGpuBackendSymbol};
  return *static_cast<const GpuBackend*>(LoadModule(search, [](void* entry) -> const void* {
    const GpuBackend* backend = reinterpret_cast<const GpuBackend* (*)()>(entry)();
    return backend != nullptr && backend->abi == kGpuBackendAbi ? backend : nullptr;
  }));
}

}  // namespace shardlab::exec
