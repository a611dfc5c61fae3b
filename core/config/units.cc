#include "core/config/units.h"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/util/quote.h"

namespace shardlab {
namespace {

using UnitTable = std::vector<std::pair<std::string, double>>;

const UnitTable& Units(Quantity kind) {
  static const UnitTable bytes = {{"B", 1},           {"KB", 1e3},           {"MB", 1e6},
                                  {"GB", 1e9},        {"TB", 1e12},          {"KiB", 1024.0},
                                  {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  static const UnitTable rates = {{"B/s", 1},           {"KB/s", 1e3},           {"MB/s", 1e6},
                                  {"GB/s", 1e9},        {"TB/s", 1e12},          {"KiB/s", 1024.0},
                                  {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}, {"TiB/s", 1099511627776.0},
                                  {"b/s", 0.125},       {"Kb/s", 125.0},         {"Mb/s", 1.25e5},
                                  {"Gb/s", 1.25e8},     {"Tb/s", 1.25e11},       {"Kbps", 125.0},
                                  {"Mbps", 1.25e5},     {"Gbps", 1.25e8},        {"Tbps", 1.25e11}};
  static const UnitTable seconds = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  static const UnitTable flops = {{"FLOP/s", 1},   {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15},
                                  {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15}};
  switch (kind) {
    case Quantity::kBytes:
      return bytes;
    case Quantity::kBytesPerSecond:
      return rates;
    case Quantity::kSeconds:
      return seconds;
    case Quantity::kFlopsPerSecond:
      return flops;
  }
  return bytes;
}

std::string UnitList(Quantity kind) {
  std::string out;
  for (const auto& [name, factor] : Units(kind)) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

const char* BaseUnit(Quantity kind) {
  switch (kind) {
    case Quantity::kBytes:
      return "bytes";
    case Quantity::kBytesPerSecond:
      return "bytes/s";
    case Quantity::kSeconds:
      return "seconds";
    case Quantity::kFlopsPerSecond:
      return "FLOP/s";
  }
  return "";
}

std::pair<double, double> PlausibleRange(Quantity kind) {
  switch (kind) {
    case Quantity::kBytes:
      return {1, 1125899906842624.0};  // 1 B .. 1 PiB
    case Quantity::kBytesPerSecond:
      return {1, 1e16};  // 1 B/s .. 10 PB/s
    case Quantity::kSeconds:
      return {1e-15, 1e6};  // 1 fs .. 11.6 days
    case Quantity::kFlopsPerSecond:
      return {1, 1e20};  // 1 FLOP/s .. 100 EFLOP/s
  }
  return {0, 0};
}

bool ParseQuantity(const std::string& text, Quantity kind, double* value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  while (begin < end && *begin == ' ') ++begin;
  double number = 0;
  auto [rest, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc() || !std::isfinite(number)) return false;
  while (rest < end && *rest == ' ') ++rest;
  std::string unit(rest, end);
  while (!unit.empty() && unit.back() == ' ') unit.pop_back();
  for (const auto& [name, factor] : Units(kind)) {
    if (unit == name) {
      *value = number * factor;
      return true;
    }
  }
  return false;
}

double ReadQuantity(const JsonNode& node, Quantity kind, bool zero_allowed) {
  double value = 0;
  if (node.json().is_number()) {
    value = node.json().get<double>();
  } else if (!node.json().is_string() || !ParseQuantity(node.json().get<std::string>(), kind, &value)) {
    node.Fail(fmt::format("expected a number in {} or a string with one of the units {}, got {}", BaseUnit(kind),
                          UnitList(kind), node.Describe()));
  }
  if (!std::isfinite(value) || value < 0 || (value == 0 && !zero_allowed))
    node.Fail(
        fmt::format("expected a {} quantity, got {}", zero_allowed ? "non-negative" : "positive", node.Describe()));
  // Far outside what hardware has, a value is a typo, and it would turn the
  // simulated step into inf or 0 s.
  const auto [low, high] = PlausibleRange(kind);
  if (value != 0 && (value < low || value > high))
    node.Fail(fmt::format("expected {}a value from {} to {}, got {}", zero_allowed ? "0 or " : "",
                          FormatQuantity(low, kind), FormatQuantity(high, kind), node.Describe()));
  return value;
}

std::string FormatQuantity(double value, Quantity kind) {
  struct Step {
    double factor;
    const char* name;
  };
  std::vector<Step> steps;
  switch (kind) {
    case Quantity::kBytes:
      steps = {{1099511627776.0, "TiB"}, {1073741824.0, "GiB"}, {1048576.0, "MiB"}, {1024.0, "KiB"}, {1, "B"}};
      break;
    case Quantity::kBytesPerSecond:
      steps = {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}, {1, "B/s"}};
      break;
    case Quantity::kSeconds:
      steps = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
      break;
    case Quantity::kFlopsPerSecond:
      steps = {{1e15, "PFLOP/s"}, {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1, "FLOP/s"}};
      break;
  }
  for (const auto& step : steps) {
    if (std::fabs(value) >= step.factor) return fmt::format("{:.4g} {}", value / step.factor, step.name);
  }
  return fmt::format("{:.4g} {}", value / steps.back().factor, steps.back().name);
}

std::vector<double> ParseSizeRange(const std::string& text, const std::string& option) {
  constexpr double kMaxBytes = 1099511627776.0;  // 1 TiB: far past any one collective's buffer
  auto parse = [&](const std::string& part) {
    double v = 0;
    // A plain number is in bytes, as JSON numbers are; written text needs its unit.
    const bool plain = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (plain) {
      std::from_chars(part.data(), part.data() + part.size(), v);
    } else if (!ParseQuantity(part, Quantity::kBytes, &v)) {
      v = 0;
    }
    if (!(v >= 1))
      throw std::runtime_error(option + ": " + Quoted(part) + " is not a size such as 8B, 64KiB, 1GiB or 4096 (bytes)");
    if (v > kMaxBytes) throw std::runtime_error(option + ": " + Quoted(part) + " is larger than the limit of 1 TiB");
    return v;
  };
  size_t split = text.find(".."), skip = 2;
  if (split == std::string::npos) split = text.find(':'), skip = 1;
  if (split == std::string::npos) return {parse(text)};
  const double lo = parse(text.substr(0, split)), hi = parse(text.substr(split + skip));
  if (lo > hi) throw std::runtime_error(option + ": the range " + text + " runs backwards");
  std::vector<double> sizes;
  for (double s = lo; s <= hi * 1.0000001; s *= 2) sizes.push_back(s);
  return sizes;
}

}  // namespace shardlab
