// doc_figures: keeps the figures of README.md and docs/ equal to what the
// programs print today.
//
//   doc_figures --check  SOURCE BUILD   every difference, one line each; exit 1 if any
//   doc_figures --update SOURCE BUILD   rewrites the figures that changed (timings within the
//                                      factor and measurements of the same shape stay)
//   doc_figures --refresh SOURCE BUILD  rewrites every figure, timings included (real
//                                      executions of the same shape stay)
//
// Two kinds of figure:
//  - Output blocks. In a fenced block, a line `$ shardlab ARGS` followed by
//    output lines shows that command's standard output; so does a line naming a
//    benchmark listed in docs/figures.json's "bench_blocks" (`$ bench/...`),
//    whose measured columns (wall time, peak memory) its patterns mark. A line `...` stands for
//    lines left out; the line after it is found by its text with numbers masked.
//    A block whose command is followed by no output is an example only.
//  - Figures in prose, listed in docs/figures.json: a text with {placeholders},
//    each filled from a command's JSON output, a number in its output, or its
//    wall-clock time.
// Wall-clock timings (the manifest's "timings" patterns in blocks, values
// marked "timing") compare within a factor, since machines and load differ
// (--check does not bound them: it is no timed test), peak memory within
// its own; everything else compares exactly. Commands run from SOURCE with BUILD's
// cli/, gui/ and bench/ first on PATH and SHARDLAB_PROGRESS=never, and with
// build/release standing for BUILD.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <stdlib.h>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {

struct Output {
  std::string text;
  int exit_code = 0;
  double wall_seconds = 0;
};

std::string Slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error(tmp.string() + ": cannot write");
  }
  fs::rename(tmp, path);
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

std::string RightTrim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  return a == std::string::npos ? "" : RightTrim(s.substr(a));
}

// Runs commands through /bin/sh, each once (a command line is its own cache key).
class Runner {
 public:
  Output Run(const std::string& command, int repeats = 1) {
    auto it = cache_.find(command);
    if (it != cache_.end()) return it->second;
    Output best;
    for (int i = 0; i < std::max(1, repeats); ++i) {
      const auto start = std::chrono::steady_clock::now();
      FILE* pipe = popen(command.c_str(), "r");
      if (!pipe) throw std::runtime_error("cannot run: " + command);
      Output out;
      char buffer[65536];
      for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.text.append(buffer, n);
      const int status = pclose(pipe);
      out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (i == 0 || out.wall_seconds < best.wall_seconds) best = std::move(out);
    }
    std::cerr << "doc_figures: ran `" << command << "` (" << best.wall_seconds << " s)\n";
    return cache_[command] = best;
  }

 private:
  std::map<std::string, Output> cache_;
};

// ---- Timings ------------------------------------------------------------------

struct Measurement {
  double value = 0;     // seconds or bytes
  bool memory = false;  // bytes (peak memory), steadier than wall time
};

// A measurement in its base unit: "162 ms", "0.53 s", "46 us" as seconds,
// "61 MiB" as bytes; nullopt when not a measurement.
std::optional<Measurement> ParseMeasurement(const std::string& text) {
  static const std::regex kMeasurement(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|ms|s|min|KiB|MiB|GiB)?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, kMeasurement)) return std::nullopt;
  const double value = std::stod(m[1]);
  const std::string unit = m[2];
  if (unit == "ns") return Measurement{value * 1e-9};
  if (unit == "us" || unit == "µs") return Measurement{value * 1e-6};
  if (unit == "ms") return Measurement{value * 1e-3};
  if (unit == "min") return Measurement{value * 60};
  if (unit == "KiB") return Measurement{value * 1024, true};
  if (unit == "MiB") return Measurement{value * 1024 * 1024, true};
  if (unit == "GiB") return Measurement{value * 1024 * 1024 * 1024, true};
  return Measurement{value};
}

bool WithinFactor(double documented, double measured, double factor) {
  if (std::isinf(factor)) return true;  // unbounded (--check's wall times)
  if (documented <= 0 || measured <= 0) return documented == measured;
  const double ratio = measured / documented;
  return ratio <= factor && ratio >= 1 / factor;
}

struct Timings {
  std::vector<std::regex> patterns;  // each with one group: the measurement
  double factor = 4;                 // for wall time
  double memory_factor = 1.5;        // for peak memory

  // The line with every timing replaced by a marker, and the timings in order.
  std::pair<std::string, std::vector<std::string>> Mask(const std::string& line) const {
    std::string masked = line;
    std::vector<std::string> found;
    for (const std::regex& pattern : patterns) {
      std::string next;
      auto begin = std::sregex_iterator(masked.begin(), masked.end(), pattern);
      size_t last = 0;
      for (auto it = begin; it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        next += masked.substr(last, m.position(1) - last) + "\x01";
        found.push_back(m[1]);
        last = m.position(1) + m.length(1);
      }
      masked = next + masked.substr(last);
    }
    return {masked, found};
  }

  // Equal, or equal but for measurements within their factor; runs of spaces
  // count as one (measured columns change width).
  bool Match(const std::string& doc, const std::string& out) const {
    if (doc == out) return true;
    auto [doc_masked, doc_times] = Mask(doc);
    auto [out_masked, out_times] = Mask(out);
    static const std::regex kSpaces(" +");
    if (std::regex_replace(doc_masked, kSpaces, " ") != std::regex_replace(out_masked, kSpaces, " ") ||
        doc_times.size() != out_times.size() || doc_times.empty())
      return false;
    for (size_t i = 0; i < doc_times.size(); ++i) {
      const auto d = ParseMeasurement(doc_times[i]), o = ParseMeasurement(out_times[i]);
      if (!d || !o || d->memory != o->memory || !WithinFactor(d->value, o->value, d->memory ? memory_factor : factor))
        return false;
    }
    return true;
  }
};

// ---- Output blocks ------------------------------------------------------------

// The line with its numbers masked: how a line after `...` is found.
std::string Skeleton(const std::string& line) {
  static const std::regex kNumber(R"([-+]?[0-9]+(?:[.,][0-9]+)*)");
  return std::regex_replace(line, kNumber, "#");
}

struct Block {
  std::string command;             // after "$ ", continuation lines joined
  size_t first_line = 0;           // index of the first output line in the document
  std::vector<std::string> lines;  // the output lines as documented
};

// Whether `command` runs the program `program` (alone or with arguments).
bool IsCommand(const std::string& command, const std::string& program) {
  return command.rfind(program, 0) == 0 && (command.size() == program.size() || command[program.size()] == ' ');
}

// The output blocks of a document: those of `shardlab` and of the commands
// starting with one of `benchmarks`.
std::vector<Block> FindBlocks(const std::vector<std::string>& doc, const std::vector<std::string>& benchmarks) {
  std::vector<Block> blocks;
  bool fenced = false;
  std::optional<Block> open;
  auto shown = [&](const std::string& command) {
    if (command.rfind("shardlab ", 0) == 0) return true;
    return std::any_of(benchmarks.begin(), benchmarks.end(),
                       [&](const std::string& b) { return IsCommand(command, b); });
  };
  auto close = [&]() {
    if (open && !open->lines.empty() && shown(open->command)) blocks.push_back(*open);
    open.reset();
  };
  for (size_t i = 0; i < doc.size(); ++i) {
    const std::string& line = doc[i];
    if (line.rfind("```", 0) == 0) {
      close();
      fenced = !fenced;
      continue;
    }
    if (!fenced) continue;
    if (line.rfind("$ ", 0) == 0) {
      close();
      Block block;
      std::string command = line.substr(2);
      while (!command.empty() && command.back() == '\\' && i + 1 < doc.size())
        command = command.substr(0, command.size() - 1) + " " + Trim(doc[++i]);
      block.command = Trim(command);
      block.first_line = i + 1;
      open = block;
      continue;
    }
    if (open) open->lines.push_back(line);
  }
  return blocks;
}

struct Problem {
  size_t line = 0;  // 1-based line in the document
  std::string what;
};

// Aligns the documented lines with the output: doc line i shows output line
// aligned[i] (npos for `...`). Fills problems when they cannot be aligned.
std::vector<size_t> Align(const Block& block, const std::vector<std::string>& out, std::vector<Problem>& problems) {
  std::vector<size_t> aligned(block.lines.size(), std::string::npos);
  size_t pos = 0;
  bool after_gap = false;
  for (size_t i = 0; i < block.lines.size(); ++i) {
    const std::string doc = RightTrim(block.lines[i]);
    if (Trim(doc) == "...") {
      after_gap = true;
      continue;
    }
    if (after_gap) {
      const std::string skeleton = Skeleton(doc);
      size_t j = pos;
      while (j < out.size() && Skeleton(out[j]) != skeleton) ++j;
      if (j == out.size()) {
        problems.push_back({block.first_line + i + 1, "no line like this in the output any more: " + doc});
        return {};
      }
      pos = j;
      after_gap = false;
    }
    if (pos >= out.size()) {
      problems.push_back({block.first_line + i + 1, "the output ends before this line: " + doc});
      return {};
    }
    aligned[i] = pos++;
  }
  if (!after_gap && pos < out.size())
    problems.push_back({block.first_line + block.lines.size(),
                        std::to_string(out.size() - pos) + " more output lines (show them or end the block with ...)"});
  return aligned;
}

bool HasGap(const Block& block) {
  return std::any_of(block.lines.begin(), block.lines.end(), [](const std::string& l) { return Trim(l) == "..."; });
}

// ---- Figures in prose ---------------------------------------------------------

std::string EscapeRegex(const std::string& literal) {
  static const std::string kSpecial = R"(\^$.|?*+()[]{})";
  std::string out;
  bool space = false;
  for (char c : literal) {
    if (c == ' ' || c == '\n' || c == '\t') {
      if (!space) out += R"(\s+)";
      space = true;
      continue;
    }
    space = false;
    if (kSpecial.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

// A JSON path: keys separated by dots; [field=value] keeps the elements of an
// array whose field (itself a dotted path) equals value, [N] takes the Nth, a
// key after a filter reads the first element kept, and a trailing # counts.
nlohmann::json Select(const nlohmann::json& root, const std::string& path);

bool FieldEquals(const nlohmann::json& element, const std::string& field, const std::string& value) {
  try {
    const nlohmann::json v = Select(element, field);
    return v.is_string() ? v.get<std::string>() == value : v.dump() == value;
  } catch (const std::exception&) {
    return false;
  }
}

nlohmann::json Select(const nlohmann::json& root, const std::string& path) {
  static const std::regex kStep(R"(([^.\[#]+)|\[([^\]=]+)=([^\]]*)\]|\[([0-9]+)\]|(#))");
  nlohmann::json node = root;
  for (auto it = std::sregex_iterator(path.begin(), path.end(), kStep); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (m[1].matched) {
      if (node.is_array()) {
        if (node.empty()) throw std::runtime_error("no element left before " + m[1].str());
        node = nlohmann::json(node.front());
      }
      if (!node.is_object() || !node.contains(m[1].str())) throw std::runtime_error("no key " + m[1].str());
      node = nlohmann::json(node[m[1].str()]);
    } else if (m[2].matched) {
      if (!node.is_array()) throw std::runtime_error("[" + m[2].str() + "=...] needs an array");
      nlohmann::json kept = nlohmann::json::array();
      for (const auto& element : node)
        if (FieldEquals(element, m[2].str(), m[3].str())) kept.push_back(element);
      if (kept.empty()) throw std::runtime_error("no element with " + m[2].str() + "=" + m[3].str());
      node = kept;
    } else if (m[4].matched) {
      const size_t index = std::stoul(m[4].str());
      if (!node.is_array() || index >= node.size()) throw std::runtime_error("no element " + m[4].str());
      node = nlohmann::json(node[index]);
    } else {
      node = node.size();
    }
  }
  return node;
}

struct Value {
  std::string text;   // as the document should show it
  double number = 0;  // for timings
  bool timing = false;
};

std::string FormatNumber(const std::string& format, double value) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, format.c_str(), value);
  return buffer;
}

class Figures {
 public:
  // `wall_factor` and `memory_factor` override the manifest's when positive.
  Figures(const fs::path& source, Runner& runner, double wall_factor, double memory_factor)
      : source_(source), runner_(runner) {
    manifest_ = nlohmann::json::parse(Slurp(source / "docs/figures.json"));
    timings_.factor = wall_factor > 0 ? wall_factor : manifest_.value("timing_factor", 4.0);
    timings_.memory_factor = memory_factor > 0 ? memory_factor : manifest_.value("memory_factor", 1.5);
    for (const auto& pattern : manifest_.value("timings", nlohmann::json::array()))
      timings_.patterns.emplace_back(pattern.get<std::string>());
  }

  // The timing patterns of a block's command: the manifest's "timings" and,
  // for a benchmark in "bench_blocks", its own.
  Timings TimingsFor(const std::string& command) const {
    Timings t = timings_;
    const nlohmann::json benchmarks = manifest_.value("bench_blocks", nlohmann::json::object());
    for (const auto& [prefix, patterns] : benchmarks.items())
      if (IsCommand(command, prefix))
        for (const auto& pattern : patterns) t.patterns.emplace_back(pattern.get<std::string>());
    return t;
  }

  std::vector<std::string> Benchmarks() const {
    std::vector<std::string> prefixes;
    const nlohmann::json benchmarks = manifest_.value("bench_blocks", nlohmann::json::object());
    for (const auto& [prefix, patterns] : benchmarks.items()) prefixes.push_back(prefix);
    return prefixes;
  }

  // Blocks of real measurements (wall-clock runs): compared by their shape,
  // every number masked.
  bool Measured(const std::string& command) const {
    for (const auto& prefix : manifest_.value("measured_blocks", nlohmann::json::array()))
      if (command.rfind(prefix.get<std::string>(), 0) == 0) return true;
    return false;
  }

  // A measured line's shape: numbers masked, and what names the machine (the
  // manifest's "machine" patterns, group 1) too.
  std::string MeasuredShape(const std::string& line) const {
    std::string masked = line;
    for (const auto& pattern : manifest_.value("machine", nlohmann::json::array())) {
      const std::regex re(pattern.get<std::string>());
      std::smatch m;
      if (std::regex_search(masked, m, re) && m.size() > 1 && m[1].matched)
        masked = masked.substr(0, m.position(1)) + "\x02" + masked.substr(m.position(1) + m.length(1));
    }
    // Measured columns change width and unit from run to run.
    static const std::regex kUnit(R"(# ?(?:ns|us|µs|ms|s|min)\b)"), kSpaces(" +");
    return std::regex_replace(std::regex_replace(Skeleton(masked), kUnit, "#"), kSpaces, " ");
  }

  std::vector<std::string> Documents() const {
    std::vector<std::string> files;
    for (const auto& f : manifest_.at("documents")) files.push_back(f.get<std::string>());
    return files;
  }

  // The manifest's figures in this document: each match's span and what it should read.
  struct Replacement {
    size_t begin = 0, end = 0;
    std::string documented;
    Value value;
    std::string name;
  };

  std::vector<Replacement> InDocument(const std::string& file, const std::string& text,
                                      std::vector<Problem>& problems) {
    std::vector<Replacement> out;
    for (const auto& figure : manifest_.at("figures")) {
      if (figure.at("file").get<std::string>() != file) continue;
      const std::string pattern = figure.at("text").get<std::string>();
      static const std::regex kPlaceholder(R"(\{([a-z_0-9]+)\})");
      std::string regex;
      std::vector<std::string> names;
      size_t last = 0;
      for (auto it = std::sregex_iterator(pattern.begin(), pattern.end(), kPlaceholder); it != std::sregex_iterator();
           ++it) {
        regex += EscapeRegex(pattern.substr(last, it->position(0) - last)) + "(.+?)";
        names.push_back((*it)[1]);
        last = it->position(0) + it->length(0);
      }
      regex += EscapeRegex(pattern.substr(last));
      const std::regex re(regex);
      std::vector<std::smatch> matches;
      for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
        matches.push_back(*it);
      if (matches.size() != 1) {
        problems.push_back(
            {0, "figure text found " + std::to_string(matches.size()) + " times (needs once): " + pattern});
        continue;
      }
      const std::smatch& m = matches.front();
      const size_t line = 1 + std::count(text.begin(), text.begin() + m.position(0), '\n');
      for (size_t k = 0; k < names.size(); ++k) {
        Replacement r;
        r.begin = m.position(k + 1);
        r.end = r.begin + m.length(k + 1);
        r.documented = m[k + 1];
        r.name = names[k];
        try {
          r.value = Evaluate(figure.at("values").at(names[k]));
        } catch (const std::exception& e) {
          problems.push_back({line, "{" + names[k] + "} in \"" + pattern + "\": " + e.what()});
          continue;
        }
        if (!Agrees(r.documented, r.value))
          problems.push_back({line, "{" + names[k] + "} in \"" + pattern + "\" reads " + r.documented +
                                        ", the program now gives " + r.value.text});
        out.push_back(r);
      }
    }
    return out;
  }

  bool Agrees(const std::string& documented, const Value& value) const {
    if (!value.timing) return documented == value.text;
    char* end = nullptr;
    const double d = std::strtod(documented.c_str(), &end);
    return end != documented.c_str() && WithinFactor(d, value.number, timings_.factor);
  }

 private:
  // A value spec: {"command": NAME, one of "json": PATH | "regex": RE | "wall": true,
  // "relative_to": SPEC (value / that - 1), "scale", "format" (printf, "list"), "timing"}.
  Value Evaluate(const nlohmann::json& spec) {
    const std::string name = spec.at("command").get<std::string>();
    const auto& command = manifest_.at("commands").at(name);
    const Output output = runner_.Run(command.at("run").get<std::string>(), command.value("repeats", 1));
    // A command whose figures describe a refusal (a run out of memory) says the exit it expects.
    const int expected_exit = command.value("exit_code", 0);
    if (output.exit_code != expected_exit)
      throw std::runtime_error("`" + command.at("run").get<std::string>() + "` exited with " +
                               std::to_string(output.exit_code) + ", not " + std::to_string(expected_exit));
    const std::string format = spec.value("format", "%g");
    Value value;
    value.timing = spec.value("timing", false);
    double raw = 0;
    if (spec.contains("wall")) {
      value.timing = true;
      raw = output.wall_seconds;
    } else if (spec.contains("regex")) {
      const std::regex re(spec.at("regex").get<std::string>());
      std::vector<double> found;
      for (auto it = std::sregex_iterator(output.text.begin(), output.text.end(), re); it != std::sregex_iterator();
           ++it)
        found.push_back(std::stod((*it)[1]));
      if (found.empty()) throw std::runtime_error("no match for " + spec.at("regex").get<std::string>());
      const std::string reduce = spec.value("reduce", "first");
      raw = reduce == "min"   ? *std::min_element(found.begin(), found.end())
            : reduce == "max" ? *std::max_element(found.begin(), found.end())
                              : found.front();
    } else {
      const nlohmann::json selected = Select(nlohmann::json::parse(output.text), spec.at("json").get<std::string>());
      if (format == "list") {
        std::string text = "[";
        for (size_t i = 0; i < selected.size(); ++i) text += (i ? ", " : "") + selected[i].dump();
        value.text = text + "]";
        return value;
      }
      if (selected.is_string()) {
        value.text = selected.get<std::string>();
        return value;
      }
      raw = selected.get<double>();
    }
    if (spec.contains("relative_to")) raw = raw / Evaluate(spec.at("relative_to")).number - 1;
    value.number = raw * spec.value("scale", 1.0);
    value.text = FormatNumber(format, value.number);
    return value;
  }

  fs::path source_;
  Runner& runner_;
  nlohmann::json manifest_;
  Timings timings_;
};

// ---- The two modes ------------------------------------------------------------

enum class Mode {
  kCheck,    // report every difference
  kUpdate,   // rewrite what differs beyond the timing factor
  kRefresh,  // rewrite every figure, timings included
};

int Process(const fs::path& source, Mode mode) {
  const bool update = mode != Mode::kCheck;
  Runner runner;
  // A check leaves wall-clock times unbounded: they measure the machine and
  // its load, and a check that failed on them would be a timed test (timing
  // goals live in bench/). Their text must still match, and peak memory stay
  // within its factor. An update rewrites those past the manifest's factors;
  // a refresh rewrites every one.
  const double wall_factor = mode == Mode::kRefresh ? 1.0 : mode == Mode::kCheck ? HUGE_VAL : 0.0;
  Figures figures(source, runner, wall_factor, mode == Mode::kRefresh ? 1.0 : 0.0);
  size_t total_problems = 0, checked_blocks = 0, checked_figures = 0;
  for (const std::string& file : figures.Documents()) {
    const fs::path path = source / file;
    std::string text = Slurp(path);
    std::vector<Problem> problems;

    // Prose figures first (spans in the original text), rewritten from the end.
    auto replacements = figures.InDocument(file, text, problems);
    checked_figures += replacements.size();
    if (update) {
      std::sort(replacements.begin(), replacements.end(),
                [](const auto& a, const auto& b) { return a.begin > b.begin; });
      // A timing within the factor stays as documented: an update rewrites what changed.
      for (const auto& r : replacements)
        if (!figures.Agrees(r.documented, r.value)) text.replace(r.begin, r.end - r.begin, r.value.text);
    }

    // Then output blocks, on the (possibly updated) lines.
    std::vector<std::string> lines = SplitLines(text);
    const std::vector<Block> blocks = FindBlocks(lines, figures.Benchmarks());
    // Rewrites from the last block so earlier line numbers stay valid.
    for (auto block = blocks.rbegin(); block != blocks.rend(); ++block) {
      ++checked_blocks;
      const Output output = runner.Run(block->command);
      std::vector<std::string> out = SplitLines(output.text);
      for (std::string& line : out) line = RightTrim(line);
      // Real executions (validate-run, bench) stay as documented while their shape holds.
      const bool measured = figures.Measured(block->command);
      const Timings timings = figures.TimingsFor(block->command);
      // Timings within the factor and live measurements of the same shape stay as documented.
      auto agrees = [&](const std::string& doc, const std::string& now) {
        return doc == now || timings.Match(doc, now) ||
               (measured && figures.MeasuredShape(doc) == figures.MeasuredShape(now));
      };
      if (update && !HasGap(*block)) {
        for (size_t i = 0; i < out.size() && i < block->lines.size(); ++i)
          if (agrees(RightTrim(block->lines[i]), out[i])) out[i] = RightTrim(block->lines[i]);
        lines.erase(lines.begin() + block->first_line, lines.begin() + block->first_line + block->lines.size());
        lines.insert(lines.begin() + block->first_line, out.begin(), out.end());
        continue;
      }
      std::vector<Problem> block_problems;
      const std::vector<size_t> aligned = Align(*block, out, block_problems);
      for (size_t i = 0; i < aligned.size(); ++i) {
        if (aligned[i] == std::string::npos) continue;
        const std::string doc = RightTrim(block->lines[i]);
        const std::string& now = out[aligned[i]];
        if (agrees(doc, now)) continue;
        if (update && Skeleton(doc) == Skeleton(now)) {
          lines[block->first_line + i] = now;
          continue;
        }
        block_problems.push_back({block->first_line + i + 1, "`" + block->command + "` now prints\n    " + now +
                                                                 "\n  where the document shows\n    " + doc});
      }
      problems.insert(problems.end(), block_problems.begin(), block_problems.end());
    }
    if (update) {
      std::string rewritten;
      for (const std::string& line : lines) rewritten += line + "\n";
      if (rewritten != Slurp(path)) {
        WriteFile(path, rewritten);
        std::cerr << "doc_figures: rewrote " << file << "\n";
      }
    }
    for (const Problem& p : problems) {
      if (update && p.what.find("now gives") != std::string::npos) continue;  // rewritten above
      std::cout << file << ":" << p.line << ": " << p.what << "\n";
      ++total_problems;
    }
  }
  std::cout << "doc_figures: " << checked_blocks << " output blocks and " << checked_figures << " figures in prose, "
            << total_problems << (total_problems == 1 ? " problem" : " problems") << "\n";
  if (total_problems && !update) std::cout << "refresh with scripts/update-docs.sh and review the diff\n";
  return total_problems ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, Mode> modes = {
      {"--check", Mode::kCheck}, {"--update", Mode::kUpdate}, {"--refresh", Mode::kRefresh}};
  if (argc != 4 || !modes.count(argv[1])) {
    std::cerr << "usage: doc_figures --check|--update|--refresh SOURCE_DIR BUILD_DIR\n";
    return 2;
  }
  try {
    const fs::path source = fs::absolute(argv[2]), build = fs::absolute(argv[3]);
    // Commands run in a scratch folder that sees the source's inputs, so the
    // files they write (-o report.json) land there, not in the source.
    std::string scratch_template = (fs::temp_directory_path() / "doc_figures.XXXXXX").string();
    if (!mkdtemp(scratch_template.data())) throw std::runtime_error("cannot make a scratch folder");
    const fs::path scratch = scratch_template;
    for (const char* input : {"configs", "bench", "scripts", "tests"})
      fs::create_directory_symlink(source / input, scratch / input);
    fs::create_directories(scratch / "docs/images");
    // Benchmarks are shown run on the Release build (`bench/sim_bench.sh build/release`).
    fs::create_directories(scratch / "build");
    fs::create_directory_symlink(build, scratch / "build/release");
    fs::current_path(scratch);
    const char* path = std::getenv("PATH");
    const std::string dirs = (build / "cli").string() + ":" + (build / "gui").string() + ":" +
                             (build / "bench").string() + ":" + (path ? path : "/usr/bin:/bin");
    setenv("PATH", dirs.c_str(), 1);
    setenv("SHARDLAB_PROGRESS", "never", 1);
    setenv("SHARDLAB_BUILD", build.c_str(), 1);  // for commands that take the build folder
    const int code = Process(source, modes.at(argv[1]));
    fs::current_path(source);
    fs::remove_all(scratch);  // symbolic links are removed, not followed
    return code;
  } catch (const std::exception& e) {
    std::cerr << "doc_figures: " << e.what() << "\n";
    return 2;
  }
}
