// Warnings a user should see once, from code that has no logger (core never
// links spdlog): a setting MindSpore ignores, a deprecated key. The CLI routes
// them into its log; by default they go to stderr as "shardlab: warning: ...".
#pragma once

#include <functional>
#include <string>

namespace shardlab {

using WarningHandler = std::function<void(const std::string& message)>;

// Replaces where warnings go; returns the previous handler.
WarningHandler SetWarningHandler(WarningHandler handler);

void Warn(const std::string& message);

}  // namespace shardlab
