// Kills the long commands (simulate on SimGrid, tune-fusion, sweep,
// validate-run) with SIGINT, SIGTERM and SIGKILL at random points and checks
// what they leave behind: no temporary or partial output file, no process of
// theirs still running, no rendezvous folder after a catchable signal, and
// exit 130 for SIGINT (143 for SIGTERM) unless the command had already ended.
// SHARDLAB_KILL_ROUNDS sets how many rounds of every command x signal run
// (default 1); SHARDLAB_KILL_SEED fixes the random delays.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/e2e/cli_runner.h"

namespace shardlab::testing {
namespace {

namespace fs = std::filesystem;

// A signal this soon after the start may find the process still loading its
// libraries, with the default dispositions.
constexpr int kStartupMs = 1000;

struct KillCase {
  std::string name;
  std::vector<std::string> args;  // after the binary; OUT is replaced by the output file
  std::vector<std::string> outputs;
  int max_delay_ms;  // kills land between 0 and this long after the start
};

// Starts `shardlab args` in its own process group, from the repository root,
// with its output discarded.
pid_t Start(const std::vector<std::string>& args) {
  // Until exec, the child is a copy of this test with its handlers: a signal
  // stays pending until the child has restored the default dispositions.
  sigset_t signals, previous;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM}) sigaddset(&signals, s);
  sigprocmask(SIG_BLOCK, &signals, &previous);
  const pid_t pid = fork();
  if (pid == 0) {
    for (int s : {SIGINT, SIGTERM}) std::signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    setpgid(0, 0);
    if (chdir(SHARDLAB_SOURCE_DIR) != 0) _exit(126);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    std::vector<char*> argv;
    std::string binary = SHARDLAB_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  REQUIRE(pid > 0);
  setpgid(pid, pid);  // also from here, so the group exists before any kill
  return pid;
}

// Whether any process of the group is still alive after up to `patience`.
bool GroupOutlives(pid_t group, std::chrono::milliseconds patience) {
  const auto until = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < until) {
    if (kill(-group, 0) != 0 && errno == ESRCH) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::vector<std::string> RendezvousFolders(pid_t pid) {
  std::vector<std::string> found;
  const std::string prefix = "shardlab-ranks-" + std::to_string(pid) + "-";
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path()))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) found.push_back(entry.path().string());
  return found;
}

std::vector<KillCase> Cases() {
  std::vector<KillCase> cases = {
      {"simulate", {"simulate", "configs/runs/pangu-alpha-13b-ascend-512.json", "--engine", "simgrid", "--out",
                    "OUT/result.json", "--trace", "OUT/trace.json"},
       {"result.json", "trace.json"}, 3000},
      {"tune-fusion", {"tune-fusion", "configs/runs/bert-large-a100-8.json", "--verify", "4", "--jobs", "2", "--out",
                       "OUT/tuned.json"},
       {"tuned.json"}, 3000},
      {"sweep", {"sweep", "configs/sweeps/bert-large-clusters.json", "--engine", "simgrid", "--jobs", "2", "--out",
                 "OUT/sweep.json"},
       {"sweep.json"}, 3000},
  };
  if (Run("validate-run configs/runs/tiny-gpt-cpu-dp2.json --backend gloo --steps 1 --warmup 0").rc == 0)
    cases.push_back({"validate-run",
                     {"validate-run", "configs/runs/tiny-gpt-cpu-dp2.json", "--backend", "gloo", "--steps", "3",
                      "--out", "OUT/report.json"},
                     {"report.json"}, 2000});
  return cases;
}

TEST_CASE("killed commands leave no temporary file or partial output and no process behind") {
  const char* rounds_env = std::getenv("SHARDLAB_KILL_ROUNDS");
  const char* seed_env = std::getenv("SHARDLAB_KILL_SEED");
  const int rounds = rounds_env ? std::max(1, std::atoi(rounds_env)) : 1;
  const unsigned seed = seed_env ? static_cast<unsigned>(std::atoi(seed_env)) : std::random_device{}();
  INFO("SHARDLAB_KILL_SEED=" << seed);
  std::mt19937 random(seed);
  const std::vector<KillCase> cases = Cases();
  for (int round = 0; round < rounds; ++round) {
    for (const KillCase& c : cases) {
      for (int signal : {SIGINT, SIGTERM, SIGKILL}) {
        const int delay = std::uniform_int_distribution<int>(0, c.max_delay_ms)(random);
        INFO("round " << round << ": " << c.name << " killed by signal " << signal << " after " << delay << " ms");
        const fs::path out = ScratchDir() / ("kill-" + c.name);
        fs::remove_all(out);
        fs::create_directories(out);
        std::vector<std::string> args = c.args;
        for (auto& a : args)
          if (a.rfind("OUT/", 0) == 0) a = (out / a.substr(4)).string();
        const pid_t pid = Start(args);
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
        kill(pid, signal);
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);

        const bool finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (signal == SIGKILL) {
          CHECK((finished || (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)));
        } else if (WIFSIGNALED(status)) {
          // Only before main() has installed its handlers (dynamic loading takes a while).
          CHECK(WTERMSIG(status) == signal);
          CHECK(delay < kStartupMs);
        } else {
          CHECK((finished || WEXITSTATUS(status) == 128 + signal));
        }
        const bool orphans = GroupOutlives(pid, std::chrono::milliseconds(5000));
        if (orphans) kill(-pid, SIGKILL);
        CHECK_FALSE(orphans);
        for (const auto& entry : fs::directory_iterator(out)) {
          const std::string name = entry.path().filename().string();
          INFO("left behind: " << name);
          CHECK(std::find(c.outputs.begin(), c.outputs.end(), name) != c.outputs.end());
          // What is there is whole: it parses.
          CHECK_NOTHROW(nlohmann::json::parse(Slurp(entry.path())));
        }
        if (signal != SIGKILL) {
          CHECK(RendezvousFolders(pid).empty());
        } else {
          for (const auto& folder : RendezvousFolders(pid)) fs::remove_all(folder);
        }
      }
    }
  }
}

}  // namespace
}  // namespace shardlab::testing
