// Writes output files so that readers never see a half-written file. The
// content goes to an unnamed file in the target's folder (O_TMPFILE; a short
// hidden temporary name where the file system lacks it), which is then renamed
// over the target, so nothing partial is left behind, even when the process is
// killed. A symbolic link is followed and its target replaced; a FIFO or a
// character device (/dev/null, /dev/stdout) is written through, never replaced.
#pragma once

#include <string>

namespace shardlab {

// Throws std::runtime_error naming the path when the file cannot be written.
void WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace shardlab
