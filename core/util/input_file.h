// The one way shardlab reads an input file (run, cluster, model, sweep,
// calibration, strategy checkpoint): it must be a regular file no larger than
// a cap, so that /dev/zero, a FIFO or a folder named by mistake is a clear
// error instead of a hang, an endless read or a confusing parse error.
#pragma once

#include <cstdint>
#include <string>

namespace shardlab {

inline constexpr int64_t kMaxInputFileBytes = int64_t{256} << 20;

// The file's whole content. Throws ConfigError(path, "", why) when it is
// missing, unreadable, not a regular file or larger than `max_bytes`.
std::string ReadInputFile(const std::string& path, int64_t max_bytes = kMaxInputFileBytes);

// Why `path` cannot be read as an input file ("does not exist", "is a
// folder", "is 300.0 MiB; input files are limited to 256.0 MiB", ...), or ""
// when it can: for errors that point at the config value naming the file.
std::string InputFileProblem(const std::string& path, int64_t max_bytes = kMaxInputFileBytes);

}  // namespace shardlab
