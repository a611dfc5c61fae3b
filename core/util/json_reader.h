// Strict, located reading of JSON config values. Every read knows the file and
// JSON pointer it came from, so every error can say exactly where and what was
// expected; objects reject keys nobody asked for, suggesting the closest one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/config_error.h"

namespace shardlab {

// Parses a whole JSON document; syntax errors become ConfigErrors naming the
// line and column.
nlohmann::json ParseJsonText(const std::string& text, const std::string& file);
// Reads and parses a file; a missing or unreadable file is a ConfigError too.
nlohmann::json ReadJsonFile(const std::string& path);

// An object key as one JSON pointer token (RFC 6901: "~" -> "~0", "/" -> "~1").
std::string EscapePointerToken(const std::string& key);

// One JSON value and where it lives.
class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string file, std::string pointer = "");

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  SourceLocation location() const { return {file_, pointer_}; }

  [[noreturn]] void Fail(const std::string& message) const;
  // "an object", "the string \"x\"", "the number 3", ... for messages.
  std::string Describe() const;

  bool AsBool() const;
  int64_t AsInt(int64_t min, int64_t max) const;
  double AsNumber(double min, double max) const;
  std::string AsString() const;
  std::string AsEnum(const std::vector<std::string>& allowed) const;
  std::vector<JsonNode> AsArray() const;
  std::vector<int64_t> AsIntList(int64_t min, int64_t max) const;

  // The member `key` of an object, or element `index` of a list; a missing
  // one is a ConfigError at this node (never nlohmann's out_of_range).
  JsonNode Child(const std::string& key) const;
  JsonNode Element(size_t index) const;

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string pointer_;
};

// Reads the keys of one JSON object. Call Finish() once all keys are read: any
// key that was never asked for is an error. The key "comment" (a string or a
// list of strings) is allowed everywhere, for sources and notes.
class ObjectReader {
 public:
  explicit ObjectReader(const JsonNode& node);

  const JsonNode& node() const { return node_; }
  bool Has(const std::string& key);
  std::optional<JsonNode> Optional(const std::string& key);
  JsonNode Required(const std::string& key);

  bool Bool(const std::string& key, bool fallback);
  int64_t Int(const std::string& key, int64_t fallback, int64_t min, int64_t max);
  int64_t RequiredInt(const std::string& key, int64_t min, int64_t max);
  double Number(const std::string& key, double fallback, double min, double max);
  std::string String(const std::string& key, const std::string& fallback);
  std::string Enum(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed);

  // Requires the "format" key that says what kind of shardlab file this is
  // (`what`: how such a file is made, for the message).
  void RequireFormat(const std::string& format, const std::string& what);

  // Rejects unknown keys. The message lists the closest valid key, if any.
  void Finish();

 private:
  void Know(const std::string& key);

  JsonNode node_;
  std::vector<std::string> known_;
};

}  // namespace shardlab
