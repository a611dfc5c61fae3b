// User text inside messages: escaped so that it cannot break the one-line error
// or send escape codes to the terminal, and cut so that a huge value cannot
// flood it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shardlab {

// `value` in double quotes, control characters and quotes escaped (\n, \x1b,
// \"), cut after `max_chars` characters with "..." and the length left out.
std::string Quoted(std::string_view value, size_t max_chars = 80);

// A whole message made printable on one line: control characters escaped and
// anything past `max_chars` cut with a note of how much was left out.
std::string OneLine(std::string_view message, size_t max_chars = 2000);

}  // namespace shardlab
