#include "core/util/input_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <sys/stat.h>

#include "core/util/config_error.h"

namespace shardlab {
namespace {

std::string Describe(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string Size(int64_t bytes) {
  return bytes >= (int64_t{1} << 20) ? fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20))
                                     : fmt::format("{} bytes", bytes);
}

}  // namespace

std::string InputFileProblem(const std::string& path, int64_t max_bytes) {
  if (path.empty()) return "is an empty name";
  struct stat info = {};
  if (::stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return "does not exist";
    if (errno == ENAMETOOLONG) return "has a name too long for the file system";
    return std::string("cannot be read: ") + std::strerror(errno);
  }
  if (!S_ISREG(info.st_mode)) return "is " + Describe(info.st_mode) + ", not a regular file";
  if (info.st_size > max_bytes)
    return fmt::format("is {}; input files are limited to {}", Size(info.st_size), Size(max_bytes));
  return "";
}

std::string ReadInputFile(const std::string& path, int64_t max_bytes) {
  if (path.empty()) throw ConfigError("\"\"", "", "no file name given");
  // O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw ConfigError(path, "", std::string("cannot open the file: ") + std::strerror(errno));
  struct stat info = {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const std::string what = Describe(info.st_mode);
    ::close(fd);
    throw ConfigError(path, "", "expected a regular file, this is " + what);
  }
  if (info.st_size > max_bytes) {
    ::close(fd);
    throw ConfigError(path, "", fmt::format("the file is {}; input files are limited to {}", Size(info.st_size),
                                            Size(max_bytes)));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string content;
  content.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (true) {
    if (done == content.size()) {
      // The file may have grown since fstat; read on, within the cap.
      if (static_cast<int64_t>(content.size()) >= max_bytes + 1) break;
      content.resize(std::min<size_t>(content.size() + 65536, static_cast<size_t>(max_bytes) + 1));
    }
    const ssize_t n = ::read(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      throw ConfigError(path, "", "cannot read the file: " + reason);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (static_cast<int64_t>(done) > max_bytes)
    throw ConfigError(path, "", fmt::format("the file grew past the input limit of {} while read", Size(max_bytes)));
  content.resize(done);
  return content;
}

}  // namespace shardlab
