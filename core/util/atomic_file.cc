#include "core/util/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

#include <sys/stat.h>

#include "core/util/interrupt.h"

namespace shardlab {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Fail(const std::string& path, const std::string& reason) {
  throw std::runtime_error("cannot write " + path + ": " + reason);
}

// The file a path names once symbolic links are followed (the link itself may
// dangle: its target is then created).
fs::path FollowLinks(const std::string& path) {
  std::error_code error;
  fs::path p = fs::absolute(path, error);
  if (error) Fail(path, error.message());
  for (int hops = 0; fs::is_symlink(fs::symlink_status(p, error)); ++hops) {
    if (hops == 40) Fail(path, "too many levels of symbolic links");
    const fs::path link = fs::read_symlink(p, error);
    if (error) Fail(path, error.message());
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  return p;
}

void WriteAll(int fd, const std::string& content, const std::string& path) {
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      Fail(path, reason);
    }
    written += static_cast<size_t>(n);
  }
}

// FIFOs and character devices are written in place. A FIFO nobody reads is
// an error, not a hang.
void WriteThrough(const fs::path& target, const std::string& content, const std::string& path, bool fifo) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) Fail(path, errno == ENXIO && fifo ? "no process reads this FIFO" : std::strerror(errno));
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  WriteAll(fd, content, path);
  if (::close(fd) != 0) Fail(path, std::strerror(errno));
}

std::string TemporaryName(const fs::path& folder) {
  static std::atomic<unsigned> counter{0};
  return (folder / (".shardlab-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
}

// Names the written file `fd` (unnamed when `unnamed`) `target`.
void Publish(int fd, bool unnamed, const std::string& temporary, const fs::path& target, const std::string& path) {
  if (unnamed) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    SetPendingTemporaryFile(temporary.c_str());
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temporary.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      const std::string reason = std::strerror(errno);
      SetPendingTemporaryFile(nullptr);
      ::close(fd);
      Fail(path, reason);
    }
  }
  ::close(fd);
  if (std::rename(temporary.c_str(), target.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    SetPendingTemporaryFile(nullptr);
    Fail(path, reason);
  }
  SetPendingTemporaryFile(nullptr);
}

}  // namespace

void WriteFileAtomically(const std::string& path, const std::string& content) {
  if (path.empty()) Fail("\"\"", "no file name");
  // stat follows every link: /dev/stdout ends at a pipe or a terminal.
  struct stat existing = {};
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    if (S_ISFIFO(existing.st_mode) || S_ISCHR(existing.st_mode))
      return WriteThrough(path, content, path, S_ISFIFO(existing.st_mode));
    Fail(path, S_ISDIR(existing.st_mode) ? "it is a folder" : "it is not a regular file");
  }
  const fs::path target = FollowLinks(path);
  const fs::path folder = target.parent_path();
  std::string temporary = TemporaryName(folder);
  int fd = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  const bool unnamed = fd >= 0;
  if (!unnamed) {
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) Fail(path, std::strerror(errno));
    SetPendingTemporaryFile(temporary.c_str());
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      const std::string reason = std::strerror(errno);
      SetPendingTemporaryFile(nullptr);
      Fail(path, reason);
    }
  }
  auto discard = [&] {
    if (!unnamed) {
      ::unlink(temporary.c_str());
      SetPendingTemporaryFile(nullptr);
    }
  };
  try {
    WriteAll(fd, content, path);
  } catch (...) {
    discard();
    throw;
  }
  if (::fsync(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    discard();
    Fail(path, reason);
  }
  Publish(fd, unnamed, temporary, target, path);
}

}  // namespace shardlab
