#include "core/util/quote.h"

#include <fmt/format.h>

namespace shardlab {
namespace {

// Appends `c` escaped when it is a control character (or, in a quoted value, a
// quote or backslash).
void AppendEscaped(std::string& out, char c, bool quoting) {
  const auto u = static_cast<unsigned char>(c);
  if (c == '\n') {
    out += "\\n";
  } else if (c == '\t') {
    out += "\\t";
  } else if (c == '\r') {
    out += "\\r";
  } else if (u < 0x20 || u == 0x7f) {
    out += fmt::format("\\x{:02x}", u);
  } else if (quoting && (c == '"' || c == '\\')) {
    out += '\\';
    out += c;
  } else {
    out += c;
  }
}

std::string Escaped(std::string_view text, size_t max_chars, bool quoting) {
  std::string out;
  const size_t kept = std::min(text.size(), max_chars);
  out.reserve(kept + 16);
  for (size_t i = 0; i < kept; ++i) AppendEscaped(out, text[i], quoting);
  if (kept < text.size()) out += fmt::format("... ({} more characters)", text.size() - kept);
  return out;
}

}  // namespace

std::string Quoted(std::string_view value, size_t max_chars) {
  if (value.size() <= max_chars) return "\"" + Escaped(value, max_chars, true) + "\"";
  // The cut note goes outside the quotes: it is not part of the value.
  std::string out = "\"" + Escaped(value.substr(0, max_chars), max_chars, true) + "...\"";
  return out + fmt::format(" ({} characters)", value.size());
}

std::string OneLine(std::string_view message, size_t max_chars) { return Escaped(message, max_chars, false); }

}  // namespace shardlab
