#include "sim/simgrid_backend.h"

#include <cstring>

#include "core/util/module_loader.h"

namespace shardlab::sim {

const SimGridBackend& LoadSimGridBackend() {
  const ModuleSearch search{"the SimGrid engine", "libshardlab_simgrid.so", "SHARDLAB_SIMGRID_MODULE",
                            SHARDLAB_SIMGRID_MODULE_DIR, kSimGridBackendSymbol};
  return *static_cast<const SimGridBackend*>(LoadModule(search, [](void* entry) -> const void* {
    const SimGridBackend* backend = reinterpret_cast<const SimGridBackend* (*)()>(entry)();
    return backend != nullptr && backend->abi == kSimGridBackendAbi &&
                   std::strcmp(backend->build, SHARDLAB_SIMGRID_BUILD) == 0
               ? backend
               : nullptr;
  }));
}

}  // namespace shardlab::sim
