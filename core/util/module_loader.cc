#include "core/util/module_loader.h"

#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace shardlab {
namespace {

std::vector<std::filesystem::path> Candidates(const ModuleSearch& search) {
  if (const char* path = std::getenv(search.env_variable.c_str()); path != nullptr && *path != '\0') return {path};
  std::vector<std::filesystem::path> paths;
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) paths.push_back(exe.parent_path() / search.file_name);
  const std::filesystem::path built = std::filesystem::path(search.build_dir) / search.file_name;
  if (paths.empty() || paths.front() != built) paths.push_back(built);
  return paths;
}

// The first loadable candidate's table; else throws naming every candidate.
const void* Load(const ModuleSearch& search, const std::function<const void*(void* entry)>& enter) {
  std::vector<std::string> tried;
  for (const auto& path : Candidates(search)) {
    if (!std::filesystem::exists(path)) {
      tried.push_back(path.string() + " (absent)");
      continue;
    }
    // RTLD_LOCAL: the module's libraries stay out of the global namespace.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried.push_back(path.string() + " (" + dlerror() + ")");
      continue;
    }
    void* entry = dlsym(handle, search.entry_symbol.c_str());
    const void* table = entry != nullptr ? enter(entry) : nullptr;
    if (table == nullptr) {
      tried.push_back(path.string() + " (not a shardlab module of this build)");
      dlclose(handle);
      continue;
    }
    return table;
  }
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : "; ") + t;
  throw std::runtime_error(fmt::format("cannot load {} {}: tried {}", search.what, search.file_name, list));
}

struct Loaded {
  const void* table = nullptr;
  std::string problem;
};

}  // namespace

const void* LoadModule(const ModuleSearch& search, const std::function<const void*(void* entry)>& enter) {
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  const std::lock_guard lock(mutex);
  auto [it, first] = loaded.try_emplace(search.file_name);
  if (first) {
    try {
      it->second.table = Load(search, enter);
    } catch (const std::runtime_error& e) {
      it->second.problem = e.what();
    }
  }
  if (it->second.table == nullptr) throw std::runtime_error(it->second.problem);
  return it->second.table;
}

}  // namespace shardlab
