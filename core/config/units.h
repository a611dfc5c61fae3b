// Physical quantities in config files: a plain number in base units (bytes,
// bytes/s, seconds, FLOP/s) or a string with a unit, such as "32 GiB",
// "100 Gb/s", "1.5 us" or "256 TFLOP/s".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/util/json_reader.h"

namespace shardlab {

enum class Quantity { kBytes, kBytesPerSecond, kSeconds, kFlopsPerSecond };

// "bytes", "bytes/s", "seconds" or "FLOP/s".
const char* BaseUnit(Quantity kind);

// The range a quantity of `kind` must lie in to describe a machine (1 B/s ..
// 10 PB/s, 1 fs .. 11.6 days, ...); outside it a value is a mistake.
std::pair<double, double> PlausibleRange(Quantity kind);

// Parses "<number> <unit>" (the space is optional). Returns false when the
// text is not a quantity of that kind.
bool ParseQuantity(const std::string& text, Quantity kind, double* value);

// Reads a positive quantity (or, with `zero_allowed`, a non-negative one)
// from a config value; errors name the expected units.
double ReadQuantity(const JsonNode& node, Quantity kind, bool zero_allowed = false);

// "64 MiB", "12.5 GB/s", "1.5 us", "256 TFLOP/s": a short human rendering.
std::string FormatQuantity(double value, Quantity kind);

// A size ("1GiB", or plain bytes "1344904432") or a range of sizes
// ("8B..4GiB" or "8B:4GiB": the powers of two from the first to the last).
// Errors name `option`.
std::vector<double> ParseSizeRange(const std::string& text, const std::string& option);

}  // namespace shardlab
