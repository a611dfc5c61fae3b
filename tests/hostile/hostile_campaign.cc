// The hostile-input campaign: generates N hostile inputs (hostile_case.h),
// runs `shardlab` on each in its own scratch folder and checks what a user
// must be able to rely on: no crash (no signal, no exit code past 127), no
// hang (10 s), no run over 2 GiB of memory, no raw library text and at most
// one error line on stderr, no terminal escape reaching it, no invalid input
// accepted, no temporary or partial file and no process left behind.
//
//   hostile_campaign --binary PATH [--count N] [--seed S] [--jobs J] [--keep DIR]
//
// Prints a table of the classes and their counts; exits 1 when any case
// failed a check, after listing the failures (--keep saves their folders).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <signal.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tests/fuzz/fuzz_oracle.h"
#include "tests/hostile/hostile_case.h"

namespace shardlab::hostile {
namespace {

namespace fs = std::filesystem;

constexpr double kHangSeconds = 10;
constexpr long kMemoryLimitKiB = 2L << 20;  // 2 GiB

struct Options {
  std::string binary;
  std::string source = SHARDLAB_SOURCE_DIR;
  uint64_t count = 300;
  uint64_t seed = 1;
  int jobs = 2;
  std::string keep;  // where failing cases' folders go; "" = nowhere
};

struct Outcome {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  bool hang = false;
  long max_rss_kib = 0;
  std::vector<std::string> problems;  // failed checks
  bool accepted() const { return exit_code == 0; }
};

void MakeFiles(const HostileCase& h, const fs::path& dir) {
  for (const auto& [name, file] : h.files) {
    const fs::path path = dir / name;
    switch (file.kind) {
      case CaseFile::Kind::kText:
        std::ofstream(path, std::ios::binary) << file.content;
        break;
      case CaseFile::Kind::kFifo:
        mkfifo(path.c_str(), 0600);
        break;
      case CaseFile::Kind::kFolder:
        fs::create_directory(path);
        break;
      case CaseFile::Kind::kSymlink:
        symlink(file.content.c_str(), path.c_str());
        break;
      case CaseFile::Kind::kSparse: {
        const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
          if (ftruncate(fd, file.size) != 0) perror("ftruncate");
          close(fd);
        }
        break;
      }
    }
  }
}

// Runs one case in `dir` and checks what it did.
Outcome RunCase(const Options& o, const HostileCase& h, const fs::path& dir) {
  MakeFiles(h, dir);
  std::vector<std::string> args = {o.binary};
  for (const std::string& a : h.args) args.push_back(a.rfind('@', 0) == 0 ? (dir / a.substr(1)).string() : a);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = (dir / ".stdout").string(), err_path = (dir / ".stderr").string();

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (chdir(o.source.c_str()) != 0) _exit(126);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  Outcome r;
  int status = 0;
  rusage usage{};
  while (true) {
    const pid_t done = wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kHangSeconds) {
      r.hang = true;
      kill(-pid, SIGKILL);
      wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.max_rss_kib = usage.ru_maxrss;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);

  // Anything of its process group still running once it has ended is an orphan.
  bool orphans = false;
  for (int i = 0; i < 100 && kill(-pid, 0) == 0; ++i) {
    orphans = i >= 99;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (orphans) kill(-pid, SIGKILL);

  std::ifstream err_in(err_path, std::ios::binary);
  const std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  if (r.hang) r.problems.push_back("hang: still running after 10 s");
  if (!r.hang && (r.signal != 0 || r.exit_code >= 128 || r.exit_code < 0))
    r.problems.push_back("crash: " +
                         (r.signal ? "signal " + std::to_string(r.signal) : "exit " + std::to_string(r.exit_code)));
  if (r.max_rss_kib > kMemoryLimitKiB) r.problems.push_back("memory: " + std::to_string(r.max_rss_kib >> 10) + " MiB");
  if (fuzz::IsRawLibraryMessage(err) && !err.empty()) r.problems.push_back("raw library text on stderr");
  size_t error_lines = 0;
  for (size_t at = err.find("error:"); at != std::string::npos; at = err.find("error:", at + 1)) ++error_lines;
  if (error_lines > 1) r.problems.push_back("several error lines");
  if (err.find('\x1b') != std::string::npos || err.find('\a') != std::string::npos)
    r.problems.push_back("a terminal control character on stderr");
  if (!r.hang && r.exit_code != 0 && r.exit_code < 128 && error_lines == 0 && err.find("Error") == std::string::npos)
    r.problems.push_back("refused without an error line");
  if (err.size() > 64 * 1024) r.problems.push_back("stderr of " + std::to_string(err.size()) + " bytes");
  if (r.exit_code == 126 || r.exit_code == 127) r.problems.push_back("could not start the binary");
  if (h.verdict == Verdict::kRefuse && r.exit_code == 0) r.problems.push_back("invalid input accepted");
  if (orphans) r.problems.push_back("a process left running");
  // Only the case's own files and its outputs may be there, the outputs whole: a
  // command that fails after writing (simulate of a run that does not fit) leaves
  // a complete result, never a partial one.
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == ".stdout" || name == ".stderr" || h.files.count(name)) continue;
    bool allowed = std::find(h.outputs.begin(), h.outputs.end(), name) != h.outputs.end();
    if (allowed && r.exit_code != 0) {  // whole: JSON that parses, a table that ends its last line
      std::ifstream in(entry.path(), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      allowed = entry.path().extension() == ".json" ? !nlohmann::json::parse(text, nullptr, false).is_discarded()
                                                    : !text.empty() && text.back() == '\n';
    }
    if (!allowed) r.problems.push_back("left behind: " + name.substr(0, 40));
  }
  return r;
}

struct Row {
  uint64_t cases = 0, refused = 0, accepted = 0, crashes = 0, hangs = 0, memory = 0, raw = 0, invalid_accepted = 0,
           leftovers = 0, other = 0;
  double max_seconds = 0;
  long max_rss_kib = 0;
};

std::string Shell(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) {
    std::string shown = a.size() > 120 ? a.substr(0, 120) + "...(" + std::to_string(a.size()) + " chars)" : a;
    for (char& ch : shown)
      if (static_cast<unsigned char>(ch) < 0x20) ch = '?';
    s += " '" + shown + "'";
  }
  return s;
}

int Campaign(const Options& o) {
  const fs::path root = fs::temp_directory_path() / ("shardlab-hostile-" + std::to_string(getpid()));
  fs::create_directories(root);
  std::map<std::string, Row> rows;
  std::vector<std::string> failures;
  std::mutex mutex;
  std::atomic<uint64_t> next{0};
  const auto started = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (uint64_t i = next++; i < o.count; i = next++) {
      const HostileCase h = MakeCase(o.seed, i, o.source);
      const fs::path dir = root / std::to_string(i);
      fs::create_directories(dir);
      const auto t0 = std::chrono::steady_clock::now();
      const Outcome r = RunCase(o, h, dir);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mutex);
      Row& row = rows[h.klass];
      ++row.cases;
      (r.accepted() ? row.accepted : row.refused) += 1;
      row.max_seconds = std::max(row.max_seconds, seconds);
      row.max_rss_kib = std::max(row.max_rss_kib, r.max_rss_kib);
      for (const std::string& p : r.problems) {
        if (p.rfind("crash", 0) == 0)
          ++row.crashes;
        else if (p.rfind("hang", 0) == 0)
          ++row.hangs;
        else if (p.rfind("memory", 0) == 0)
          ++row.memory;
        else if (p.rfind("raw", 0) == 0)
          ++row.raw;
        else if (p.rfind("invalid", 0) == 0)
          ++row.invalid_accepted;
        else if (p.rfind("left", 0) == 0 || p.rfind("a process", 0) == 0)
          ++row.leftovers;
        else
          ++row.other;
      }
      if (!r.problems.empty()) {
        std::string line = "case " + std::to_string(i) + " [" + h.klass + ": " + h.what + "]:";
        for (const std::string& p : r.problems) line += " " + p + ";";
        line += "\n    shardlab" + Shell(h.args);
        failures.push_back(line);
        if (!o.keep.empty()) {
          fs::create_directories(o.keep);
          fs::copy(dir, fs::path(o.keep) / std::to_string(i),
                   fs::copy_options::recursive | fs::copy_options::copy_symlinks);
        }
      }
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::max(1, o.jobs); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  fs::remove_all(root);

  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%-28s %6s %7s %8s %7s %5s %6s %4s %8s %9s %5s %8s %8s\n", "class", "cases", "refused", "accepted",
              "crashes", "hangs", ">2GiB", "raw", "invalid+", "leftovers", "other", "max s", "max MiB");
  Row total;
  for (const std::string& klass : CaseClasses()) {
    if (!rows.count(klass)) continue;
    const Row& r = rows[klass];
    std::printf("%-28s %6lu %7lu %8lu %7lu %5lu %6lu %4lu %8lu %9lu %5lu %8.2f %8ld\n", klass.c_str(), r.cases,
                r.refused, r.accepted, r.crashes, r.hangs, r.memory, r.raw, r.invalid_accepted, r.leftovers, r.other,
                r.max_seconds, r.max_rss_kib >> 10);
    total.cases += r.cases, total.refused += r.refused, total.accepted += r.accepted, total.crashes += r.crashes;
    total.hangs += r.hangs, total.memory += r.memory, total.raw += r.raw, total.invalid_accepted += r.invalid_accepted;
    total.leftovers += r.leftovers, total.other += r.other;
    total.max_seconds = std::max(total.max_seconds, r.max_seconds);
    total.max_rss_kib = std::max(total.max_rss_kib, r.max_rss_kib);
  }
  std::printf("%-28s %6lu %7lu %8lu %7lu %5lu %6lu %4lu %8lu %9lu %5lu %8.2f %8ld\n", "all", total.cases, total.refused,
              total.accepted, total.crashes, total.hangs, total.memory, total.raw, total.invalid_accepted,
              total.leftovers, total.other, total.max_seconds, total.max_rss_kib >> 10);
  std::printf("seed %lu, %lu cases in %.0f s with %d jobs; %zu failed\n", o.seed, o.count, wall, o.jobs,
              failures.size());
  std::sort(failures.begin(), failures.end());
  for (size_t i = 0; i < failures.size() && i < 200; ++i) std::printf("%s\n", failures[i].c_str());
  return failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace shardlab::hostile

int main(int argc, char** argv) {
  shardlab::hostile::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--binary")
      o.binary = std::filesystem::absolute(value).string();
    else if (flag == "--count")
      o.count = std::stoull(value);
    else if (flag == "--seed")
      o.seed = std::stoull(value);
    else if (flag == "--jobs")
      o.jobs = std::stoi(value);
    else if (flag == "--keep")
      o.keep = value;
    else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  if (o.binary.empty()) {
    std::fprintf(stderr, "usage: hostile_campaign --binary PATH [--count N] [--seed S] [--jobs J] [--keep DIR]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  return shardlab::hostile::Campaign(o);
}
