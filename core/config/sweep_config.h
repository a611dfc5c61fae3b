// Sweep files (`shardlab sweep`): a base run file and a grid of values for
// its keys (cluster, model, or any dotted key such as parallel.micro_batch_num).
// Every point of the grid is the base run with one value per key.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/util/json_reader.h"

namespace shardlab {

// At most this many points in one grid.
inline constexpr size_t kMaxSweepPoints = 100000;

// One key of the grid and the values it takes.
struct SweepAxis {
  std::string key;                         // "cluster", "model" or a dotted key of the run file
  std::vector<nlohmann::json> values;      // as the sweep file writes them, for the table
  std::vector<nlohmann::json> run_values;  // as the run file gets them (absolute file paths)
};

struct SweepSpec {
  std::string file;      // the sweep file
  std::string run_file;  // the base run, resolved against the sweep file
  std::vector<SweepAxis> grid;
  std::string engine = "analytical";
  std::string out_file;  // resolved against the sweep file; empty: none

  size_t point_count() const;
  // Point `index`: one value index per axis, the last axis fastest.
  std::vector<size_t> Coordinates(size_t index) const;
  // "key=value key=value" for progress lines and error rows.
  std::string PointName(size_t index) const;
  // The base run document with point `index`'s values set.
  nlohmann::json PointRun(const nlohmann::json& base, size_t index) const;
};

// A grid value as text (a table cell, a point's name): strings bare, any
// other value as JSON.
std::string GridValueText(const nlohmann::json& value);

// Reads a sweep document; relative paths resolve against `root.file()`.
SweepSpec ReadSweepSpec(const JsonNode& root);
SweepSpec LoadSweepFile(const std::string& path);

// A grid key the base run does not have would fail every point alike: it is
// the sweep file's error, raised here at /grid/<key> before anything runs.
void CheckGridKeys(const SweepSpec& spec, const nlohmann::json& base);

}  // namespace shardlab
