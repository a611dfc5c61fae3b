// What a fuzz target may do with any input: accept it, or refuse it with one
// of shardlab's own errors whose message is clean text for the user. Anything
// else aborts, which libFuzzer reports as a crash and saves the input:
// another exception type (nlohmann's, std::out_of_range, bad_alloc, a
// filesystem_error), or a message carrying raw library text.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "core/util/config_error.h"

namespace shardlab::fuzz {

// The message without the text the user wrote, which may hold anything:
// double-quoted values (as Quoted() writes them, escapes included).
inline std::string WithoutQuotedValues(std::string_view message) {
  std::string out;
  bool quoted = false;
  for (size_t i = 0; i < message.size(); ++i) {
    const char c = message[i];
    if (quoted && c == '\\') {
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted) {
      out += c;
    }
  }
  return out;
}

// Text that only a library writes: users must never see it.
inline bool IsRawLibraryMessage(std::string_view message) {
  // Phrases of nlohmann_json, libstdc++ and std::filesystem that no message of ours uses.
  static constexpr std::string_view kMarkers[] = {"[json.exception",
                                                  "parse error at",
                                                  "syntax error while parsing",
                                                  "number overflow parsing",
                                                  "type must be",
                                                  "cannot use operator",
                                                  "key '",
                                                  "filesystem error",
                                                  "basic_string",
                                                  "std::",
                                                  "vector::",
                                                  "map::at",
                                                  "bad_alloc",
                                                  "bad_optional",
                                                  "bad_variant",
                                                  "what():"};
  if (message.empty()) return true;
  for (std::string_view marker : kMarkers)
    if (message.find(marker) != std::string_view::npos) return true;
  return false;
}

[[noreturn]] inline void Reject(const char* kind, const std::string& message) {
  std::fprintf(stderr, "fuzz oracle: %s: %s\n", kind, message.c_str());
  std::abort();
}

// Runs `fn`; returns whether it accepted the input (no exception).
template <typename Fn>
bool Accepts(Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const std::system_error& e) {  // filesystem_error and the like: a library's own words
    Reject("raw system error", e.what());
  } catch (const ConfigError& e) {  // its file and pointer are the user's text
    if (IsRawLibraryMessage(WithoutQuotedValues(e.message()))) Reject("raw library text in an error", e.what());
    return false;
  } catch (const std::runtime_error& e) {  // GraphError, LayoutError and plain user errors
    if (IsRawLibraryMessage(WithoutQuotedValues(e.what()))) Reject("raw library text in an error", e.what());
    return false;
  } catch (const std::exception& e) {
    Reject("an exception no user error derives from", e.what());
  }
}

// The check on a result an accepted input produced.
inline void Expect(bool condition, const std::string& what) {
  if (!condition) Reject("accepted input gave a wrong result", what);
}

}  // namespace shardlab::fuzz
