// The one exception type for mistakes a user can make in a config file: it
// names the file, the JSON pointer of the offending value and what was
// expected, so the CLI can print it as a single line (control characters
// escaped, a runaway value cut: see quote.h).
#pragma once

#include <stdexcept>
#include <string>

#include "core/util/quote.h"

namespace shardlab {

// Where a value was written: a file and the JSON pointer of the value in it
// (in a protobuf file, the path of the field, written the same way).
struct SourceLocation {
  std::string file;
  std::string pointer;

  bool empty() const { return file.empty() && pointer.empty(); }
};

class ConfigError : public std::runtime_error {
 public:
  // `pointer` is an RFC 6901 JSON pointer ("" means the whole document).
  ConfigError(std::string file, std::string pointer, const std::string& message)
      : std::runtime_error(Format(file, pointer, message)),
        file_(std::move(file)),
        pointer_(std::move(pointer)),
        message_(message) {}
  ConfigError(const SourceLocation& where, const std::string& message)
      : ConfigError(where.file, where.pointer, message) {}

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  // What was expected, without the file and pointer.
  const std::string& message() const { return message_; }

 private:
  static std::string Format(const std::string& file, const std::string& pointer, const std::string& message) {
    // File and pointer come from the user too (a key may be anything): printable and short.
    const std::string where = file.empty() ? "<inline>" : OneLine(file, 400);
    return where + ": " + (pointer.empty() ? "/" : OneLine(pointer, 160)) + ": " + OneLine(message);
  }

  std::string file_;
  std::string pointer_;
  std::string message_;
};

}  // namespace shardlab
