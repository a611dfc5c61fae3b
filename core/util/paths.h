// Paths named inside files: a relative path in a run, cluster, sweep or
// validation file is relative to the folder of the file that names it (the
// working directory for documents read from memory). One resolver, used by
// every reader.
#pragma once

#include <string>

namespace shardlab {

// `path` as seen from the working directory, lexically normalised; absolute
// paths and "" come back unchanged (but normalised).
std::string ResolveRelativeTo(const std::string& naming_file, const std::string& path);

// A relative `path` named in `from_file`, rewritten so that `to_file` names
// the same file (a run file written elsewhere); absolute paths unchanged.
std::string RebaseRelative(const std::string& path, const std::string& from_file, const std::string& to_file);

// `path` for a message: relative to the working directory when it lies below
// it ("configs/calibration/localhost-cpu.json"), else as given.
std::string DisplayPath(const std::string& path);

}  // namespace shardlab
