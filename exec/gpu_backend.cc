#include "exec/gpu_backend.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace shardlab::exec {
namespace {

constexpr const char* kModuleName = "libshardlab_gpu.so";

std::vector<std::filesystem::path> Candidates() {
  if (const char* path = std::getenv("SHARDLAB_GPU_MODULE"); path != nullptr && *path != '\0') return {path};
  std::vector<std::filesystem::path> paths;
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) paths.push_back(exe.parent_path() / kModuleName);
  // The build tree's copy, for the test programs, which live in another folder.
  const std::filesystem::path built = std::filesystem::path(SHARDLAB_GPU_MODULE_DIR) / kModuleName;
  if (paths.empty() || paths.front() != built) paths.push_back(built);
  return paths;
}

const GpuBackend* Load(std::string* problem) {
  std::vector<std::string> tried;
  for (const auto& path : Candidates()) {
    if (!std::filesystem::exists(path)) {
      tried.push_back(path.string() + " (absent)");
      continue;
    }
    // RTLD_LOCAL: CUDA's symbols stay out of the global namespace. The
    // module is never unloaded (its communicators live until exit).
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried.push_back(path.string() + " (" + dlerror() + ")");
      continue;
    }
    using Entry = const GpuBackend* (*)();
    const auto entry = reinterpret_cast<Entry>(dlsym(handle, kGpuBackendSymbol));
    const GpuBackend* backend = entry != nullptr ? entry() : nullptr;
    if (backend == nullptr || backend->abi != kGpuBackendAbi) {
      tried.push_back(path.string() + " (not a shardlab GPU module of this build)");
      continue;
    }
    return backend;
  }
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : "; ") + t;
  *problem = fmt::format("cannot load the GPU back end {}: tried {}", kModuleName, list);
  return nullptr;
}

}  // namespace

const GpuBackend& LoadGpuBackend() {
  static std::once_flag once;
  static const GpuBackend* backend = nullptr;
  static std::string problem;
  std::call_once(once, [] { backend = Load(&problem); });
  if (backend == nullptr) throw std::runtime_error(problem);
  return *backend;
}

}  // namespace shardlab::exec
