#include "core/util/json_reader.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/util/input_file.h"
#include "core/util/suggest.h"

namespace shardlab {

std::string EscapePointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + ("\"" + items[i] + "\"");
  return out;
}

}  // namespace

namespace {

// Line and column (1-based) of byte `offset` (0-based) of `text`.
std::string Position(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  return fmt::format("line {}, column {}", line, offset - line_start + 1);
}

// The parser's reason in our words: nlohmann writes "syntax error while
// parsing value - invalid literal; last read: '1x'"; we keep what is wrong
// and quote what it read.
std::string ParseReason(const std::string& what) {
  std::string reason = what;
  if (const size_t dash = reason.find(" - "); dash != std::string::npos) reason = reason.substr(dash + 3);
  else if (const size_t colon = reason.rfind(": "); colon != std::string::npos) reason = reason.substr(colon + 2);
  std::string near;
  if (const size_t last = reason.find("; last read: '"); last != std::string::npos) {
    near = reason.substr(last + 14);
    if (!near.empty() && near.back() == '\'') near.pop_back();
    reason = reason.substr(0, last);
  }
  return near.empty() ? reason : reason + ", after " + Quoted(near, 40);
}

}  // namespace

nlohmann::json ParseJsonText(const std::string& text, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(file, "",
                      fmt::format("not valid JSON at {}: {}", Position(text, e.byte == 0 ? 0 : e.byte - 1),
                                  ParseReason(e.what())));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number past double's range ("number overflow parsing '1e400'"), which the parser reports without a place.
    std::string literal = e.what();
    const size_t open = literal.find('\'');
    literal = open == std::string::npos ? "" : literal.substr(open + 1, literal.find('\'', open + 1) - open - 1);
    const size_t at = literal.empty() ? std::string::npos : text.find(literal);
    throw ConfigError(file, "",
                      fmt::format("not valid JSON{}: the number {} is beyond the range of a double",
                                  at == std::string::npos ? "" : " at " + Position(text, at), Quoted(literal, 40)));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(file, "", "not valid JSON");
  }
}

nlohmann::json ReadJsonFile(const std::string& path) { return ParseJsonText(ReadInputFile(path), path); }

JsonNode::JsonNode(const nlohmann::json& value, std::string file, std::string pointer)
    : value_(&value), file_(std::move(file)), pointer_(std::move(pointer)) {}

void JsonNode::Fail(const std::string& message) const { throw ConfigError(file_, pointer_, message); }

std::string JsonNode::Describe() const {
  const auto& v = *value_;
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return "the number " + v.dump();
  if (v.is_string()) return "the string " + Quoted(v.get<std::string>(), 40);
  if (v.is_array()) return "a list";
  return "an object";
}

bool JsonNode::AsBool() const {
  if (!value_->is_boolean()) Fail("expected true or false, got " + Describe());
  return value_->get<bool>();
}

int64_t JsonNode::AsInt(int64_t min, int64_t max) const {
  if (!value_->is_number_integer()) Fail(fmt::format("expected an integer in {}..{}, got {}", min, max, Describe()));
  if (value_->is_number_unsigned() && value_->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    Fail(fmt::format("expected an integer in {}..{}, got {}", min, max, Describe()));
  const int64_t v = value_->get<int64_t>();
  if (v < min || v > max) Fail(fmt::format("expected an integer in {}..{}, got {}", min, max, v));
  return v;
}

double JsonNode::AsNumber(double min, double max) const {
  if (!value_->is_number()) Fail(fmt::format("expected a number in [{}, {}], got {}", min, max, Describe()));
  const double v = value_->get<double>();
  if (!std::isfinite(v) || v < min || v > max) Fail(fmt::format("expected a number in [{}, {}], got {}", min, max, v));
  return v;
}

std::string JsonNode::AsString() const {
  if (!value_->is_string()) Fail("expected a string, got " + Describe());
  return value_->get<std::string>();
}

std::string JsonNode::AsEnum(const std::vector<std::string>& allowed) const {
  if (!value_->is_string()) Fail("expected one of " + Join(allowed) + ", got " + Describe());
  std::string v = value_->get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    Fail("expected one of " + Join(allowed) + ", got " + Quoted(v) + DidYouMean(v, allowed));
  return v;
}

std::vector<JsonNode> JsonNode::AsArray() const {
  if (!value_->is_array()) Fail("expected a list, got " + Describe());
  std::vector<JsonNode> items;
  items.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) items.push_back(Element(i));
  return items;
}

std::vector<int64_t> JsonNode::AsIntList(int64_t min, int64_t max) const {
  std::vector<int64_t> out;
  for (const auto& item : AsArray()) out.push_back(item.AsInt(min, max));
  return out;
}

JsonNode JsonNode::Child(const std::string& key) const {
  if (!value_->is_object()) Fail("expected an object, got " + Describe());
  const auto it = value_->find(key);
  if (it == value_->end()) Fail("missing key \"" + key + "\"");
  return JsonNode(*it, file_, pointer_ + "/" + EscapePointerToken(key));
}

JsonNode JsonNode::Element(size_t index) const {
  if (!value_->is_array()) Fail("expected a list, got " + Describe());
  if (index >= value_->size())
    Fail(fmt::format("a list of {} has no element {}", value_->size(), index));
  return JsonNode((*value_)[index], file_, pointer_ + "/" + std::to_string(index));
}

ObjectReader::ObjectReader(const JsonNode& node) : node_(node) {
  if (!node_.json().is_object()) node_.Fail("expected an object, got " + node_.Describe());
  if (auto comment = Optional("comment")) {
    if (comment->json().is_array()) {
      for (const auto& line : comment->AsArray()) line.AsString();
    } else {
      comment->AsString();
    }
  }
}

void ObjectReader::Know(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
}

bool ObjectReader::Has(const std::string& key) {
  Know(key);
  return node_.json().contains(key);
}

std::optional<JsonNode> ObjectReader::Optional(const std::string& key) {
  if (!Has(key)) return std::nullopt;
  return node_.Child(key);
}

JsonNode ObjectReader::Required(const std::string& key) {
  if (!Has(key)) {
    // A key of this object that is a typo of the missing one is the likely cause.
    std::string typo;
    if (node_.json().is_object())
      for (const auto& item : node_.json().items())
        if (ClosestMatch(item.key(), {key}) == key) typo = item.key();
    node_.Fail("missing required key \"" + key + "\"" +
               (typo.empty() ? "" : " (is " + Quoted(typo) + " a misspelling of it?)"));
  }
  return node_.Child(key);
}

bool ObjectReader::Bool(const std::string& key, bool fallback) {
  auto v = Optional(key);
  return v ? v->AsBool() : fallback;
}

int64_t ObjectReader::Int(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
  auto v = Optional(key);
  return v ? v->AsInt(min, max) : fallback;
}

int64_t ObjectReader::RequiredInt(const std::string& key, int64_t min, int64_t max) {
  return Required(key).AsInt(min, max);
}

double ObjectReader::Number(const std::string& key, double fallback, double min, double max) {
  auto v = Optional(key);
  return v ? v->AsNumber(min, max) : fallback;
}

std::string ObjectReader::String(const std::string& key, const std::string& fallback) {
  auto v = Optional(key);
  return v ? v->AsString() : fallback;
}

std::string ObjectReader::Enum(const std::string& key, const std::string& fallback,
                               const std::vector<std::string>& allowed) {
  auto v = Optional(key);
  return v ? v->AsEnum(allowed) : fallback;
}

void ObjectReader::Finish() {
  for (const auto& [key, value] : node_.json().items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string hint = DidYouMean(key, known_);
    node_.Child(key).Fail("unknown key " + Quoted(key) + (hint.empty() ? "; valid keys: " + Join(known_) : hint));
  }
}

void ObjectReader::RequireFormat(const std::string& format, const std::string& what) {
  auto node = Optional("format");
  const std::string expected = "expected \"format\": \"" + format + "\" (" + what + ")";
  if (!node) node_.Fail("no \"format\" key: " + expected);
  if (node->AsString() != format) node->Fail(expected);
}

}  // namespace shardlab
