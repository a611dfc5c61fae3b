#include "core/util/paths.h"

#include <filesystem>

namespace shardlab {

namespace fs = std::filesystem;

std::string ResolveRelativeTo(const std::string& naming_file, const std::string& path) {
  if (path.empty()) return path;
  const fs::path p(path);
  if (p.is_absolute() || naming_file.empty()) return p.lexically_normal().string();
  return (fs::path(naming_file).parent_path() / p).lexically_normal().string();
}

std::string RebaseRelative(const std::string& path, const std::string& from_file, const std::string& to_file) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  const fs::path target = fs::absolute(ResolveRelativeTo(from_file, path));
  const fs::path folder = fs::absolute(to_file).parent_path().lexically_normal();
  return target.lexically_normal().lexically_relative(folder).string();
}

std::string DisplayPath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path cwd = std::filesystem::current_path(error);
  if (error || path.empty()) return path;
  const std::filesystem::path relative = std::filesystem::path(path).lexically_normal().lexically_relative(cwd);
  if (relative.empty() || *relative.begin() == "..") return path;
  return relative.string();
}

}  // namespace shardlab
