#include "exec/rank_launcher.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

#include <fmt/format.h>

#include "core/util/child_jobs.h"
#include "core/util/interrupt.h"
#include "exec/cpu_runtime.h"
#ifdef SHARDLAB_HAVE_GLOO
#include "exec/gloo_communicator.h"
#endif
#ifdef SHARDLAB_HAVE_NCCL
#include "exec/gpu_backend.h"
#endif

namespace shardlab::exec {
namespace {

constexpr const char* kRendezvousPrefix = "shardlab-ranks-";

// Removes the rendezvous directories of launchers that were killed before
// they could (their name carries the launcher's process id).
void RemoveAbandonedRendezvous(const std::filesystem::path& folder) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kRendezvousPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + std::strlen(kRendezvousPrefix), nullptr, 10);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    std::filesystem::remove_all(entry.path(), ignored);
  }
}

// A rendezvous directory removed when the run ends.
class TempDirectory {
 public:
  TempDirectory() {
    const std::filesystem::path folder = std::filesystem::temp_directory_path();
    RemoveAbandonedRendezvous(folder);
    std::string pattern = (folder / fmt::format("{}{}-XXXXXX", kRendezvousPrefix, ::getpid())).string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a rendezvous directory in " + folder.string());
    path_ = pattern;
  }
  ~TempDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string RunRank(const LaunchOptions& options, const std::string& dir, int rank,
                    const std::function<std::string(RankContext&)>& body) {
  if (options.backend == "gloo") {
#ifdef SHARDLAB_HAVE_GLOO
    GlooOptions gloo;
    gloo.rendezvous_dir = dir;
    gloo.timeout = options.timeout;
    auto world = ConnectGlooWorld(rank, options.ranks, gloo);
    auto runtime = MakeCpuRuntime();
    RankContext context{rank, options.ranks, *world, *runtime};
    return body(context);
#endif
  } else if (options.backend == "nccl") {
#ifdef SHARDLAB_HAVE_NCCL
    const GpuBackend& gpu = LoadGpuBackend();
    auto runtime = gpu.make_runtime(rank, std::chrono::minutes(2));
    auto world = gpu.connect_world(rank, options.ranks, dir, options.timeout, runtime->NativeStream(Stream::kCompute));
    RankContext context{rank, options.ranks, *world, *runtime};
    return body(context);
#endif
  }
  throw std::runtime_error("back end " + options.backend + " is not built");
}

}  // namespace

bool BackendAvailable(const std::string& backend, std::string* why) {
  if (backend == "gloo") {
#ifdef SHARDLAB_HAVE_GLOO
    return true;
#else
    *why = "the gloo back end is not built (Gloo was not found: install libgloo-dev and rebuild)";
    return false;
#endif
  }
  if (backend == "nccl") {
#ifdef SHARDLAB_HAVE_NCCL
    ChildJobOptions options;
    // The child reports a module that does not load as it reports a missing GPU.
    const auto results = RunInChildProcesses(
        {0},
        [](size_t) {
          try {
            return LoadGpuBackend().device_problem();
          } catch (const std::exception& e) {
            return std::string(e.what());
          }
        },
        options);
    if (results[0].status != ChildJobResult::Status::kOk) {
      *why = "the CUDA probe failed: " + results[0].output;
      return false;
    }
    *why = results[0].output;
    return why->empty();
#else
    *why = "the nccl back end is not built (no CUDA toolkit with NCCL was found at configure time)";
    return false;
#endif
  }
  *why = "unknown back end \"" + backend + "\" (gloo or nccl)";
  return false;
}

std::vector<std::string> RunRanks(const LaunchOptions& options, const std::function<std::string(RankContext&)>& body) {
  if (options.ranks > kMaxLocalRanks)
    throw std::runtime_error(fmt::format("{} ranks: the executor runs one process per rank on this machine, at most {}",
                                         options.ranks, kMaxLocalRanks));
  std::string why;
  if (!BackendAvailable(options.backend, &why)) throw std::runtime_error(why);
  TempDirectory dir;
  std::vector<size_t> ranks(static_cast<size_t>(options.ranks));
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = r;
  bool failed = false;
  ChildJobOptions jobs;
  jobs.parallel = options.ranks;
  jobs.forward_progress = true;  // rank 0's reports stand for the program's
  jobs.on_done = [&failed](size_t, const ChildJobResult& r) {
    if (r.status != ChildJobResult::Status::kOk) failed = true;
  };
  jobs.stop = [&failed] { return failed || StopRequested(); };
  const auto results = RunInChildProcesses(
      ranks, [&](size_t rank) { return RunRank(options, dir.path(), static_cast<int>(rank), body); }, jobs);
  if (StopRequested()) throw Stopped();
  // The first rank that failed on its own, not one stopped because of it.
  for (size_t r = 0; r < results.size(); ++r)
    if (results[r].status == ChildJobResult::Status::kFailed)
      throw std::runtime_error(fmt::format("rank {}: {}", r, results[r].output));
  std::vector<std::string> outputs;
  for (size_t r = 0; r < results.size(); ++r) {
    if (results[r].status != ChildJobResult::Status::kOk)
      throw std::runtime_error(fmt::format("rank {} was stopped after another rank failed", r));
    outputs.push_back(results[r].output);
  }
  return outputs;
}

}  // namespace shardlab::exec
