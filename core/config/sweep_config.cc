#include "core/config/sweep_config.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/config/run_config.h"
#include "core/util/paths.h"
#include "core/util/quote.h"

namespace shardlab {
namespace {

std::string Describe(const nlohmann::json& v) { return JsonNode(v, "").Describe(); }

}  // namespace

std::string GridValueText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

size_t SweepSpec::point_count() const {
  size_t points = 1;
  for (const SweepAxis& axis : grid) points *= axis.values.size();
  return points;
}

std::vector<size_t> SweepSpec::Coordinates(size_t index) const {
  std::vector<size_t> c(grid.size());
  for (size_t a = grid.size(); a-- > 0;) {
    c[a] = index % grid[a].values.size();
    index /= grid[a].values.size();
  }
  return c;
}

std::string SweepSpec::PointName(size_t index) const {
  std::string name;
  const auto coords = Coordinates(index);
  for (size_t a = 0; a < grid.size(); ++a)
    name += (a ? " " : "") + grid[a].key + "=" + GridValueText(grid[a].values[coords[a]]);
  return name;
}

nlohmann::json SweepSpec::PointRun(const nlohmann::json& base, size_t index) const {
  if (!base.is_object()) throw ConfigError(run_file, "", "expected a run (an object), got " + Describe(base));
  nlohmann::json doc = base;
  const auto coords = Coordinates(index);
  for (size_t a = 0; a < grid.size(); ++a) {
    try {
      SetDottedKey(doc, grid[a].key, grid[a].run_values[coords[a]]);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(file, "/grid/" + EscapePointerToken(grid[a].key), e.what());
    }
  }
  return doc;
}

SweepSpec ReadSweepSpec(const JsonNode& root) {
  namespace fs = std::filesystem;
  const std::string& path = root.file();
  ObjectReader r(root);
  SweepSpec spec;
  spec.file = path;
  spec.run_file = ResolveRelativeTo(path, r.Required("run").AsString());
  const JsonNode grid = r.Required("grid");
  spec.engine = r.Required("engine").AsEnum({"analytical", "simgrid"});
  const std::string out = r.String("out", "");
  if (!out.empty()) spec.out_file = ResolveRelativeTo(path, out);
  r.Finish();
  if (!grid.json().is_object() || grid.json().empty())
    grid.Fail("expected an object of run-file keys, each with a list of values, got " + grid.Describe());
  size_t points = 1;
  for (const auto& [key, values] : grid.json().items()) {
    if (key == "comment") continue;
    const JsonNode node = grid.Child(key);
    if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
      node.Fail("expected a key of the run file, dotted for nested keys (such as parallel.micro_batch_num)");
    if (!values.is_array() || values.empty()) node.Fail("expected a non-empty list of values, got " + node.Describe());
    SweepAxis axis{key, values.get<std::vector<nlohmann::json>>(), {}};
    for (size_t i = 0; i < values.size(); ++i) {
      nlohmann::json v = values[i];
      if (key == "cluster" || key == "model") {
        if (!v.is_string() || v.get<std::string>().empty())
          node.Element(i).Fail("expected a file path (relative to the sweep file), got " + node.Element(i).Describe());
        v = fs::absolute(ResolveRelativeTo(path, v.get<std::string>())).lexically_normal().string();
      }
      axis.run_values.push_back(v);
    }
    points *= axis.values.size();
    if (points > kMaxSweepPoints) node.Fail(fmt::format("the grid has more than {} points", kMaxSweepPoints));
    spec.grid.push_back(std::move(axis));
  }
  if (spec.grid.empty()) grid.Fail("expected at least one run-file key besides \"comment\"");
  return spec;
}

SweepSpec LoadSweepFile(const std::string& path) {
  const nlohmann::json doc = ReadJsonFile(path);
  return ReadSweepSpec(JsonNode(doc, path));
}

void CheckGridKeys(const SweepSpec& spec, const nlohmann::json& base) {
  const nlohmann::json doc = spec.PointRun(base, 0);
  try {
    ReadRunSpec(JsonNode(doc, spec.run_file));
  } catch (const ConfigError& e) {
    if (e.file() != spec.run_file) return;
    for (const SweepAxis& axis : spec.grid) {
      std::string pointer = "/" + axis.key;
      std::replace(pointer.begin(), pointer.end(), '.', '/');
      if (e.pointer() == pointer && e.message().find("unknown key") != std::string::npos)
        throw ConfigError(spec.file, "/grid/" + EscapePointerToken(axis.key),
                          "not a key of the run file " + Quoted(spec.run_file, 400) + ": " + e.message());
    }
  }
}

}  // namespace shardlab
