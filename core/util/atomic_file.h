// Writes output files so that readers never see a half-written file: the
// content goes to a temporary file in the same folder, which is then renamed
// over the target. On failure nothing is left behind.
#pragma once

#include <string>

namespace shardlab {

// Throws std::runtime_error naming the path when the file cannot be written.
void WriteFileAtomically(const std::string& path, const std::string& content);

}  // namespace shardlab
