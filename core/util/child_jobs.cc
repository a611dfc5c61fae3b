#include "core/util/child_jobs.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include <sys/prctl.h>
#include <sys/wait.h>

#include "core/util/progress_report.h"

namespace shardlab {
namespace {

struct Running {
  size_t slot;  // position in the result vector
  pid_t pid;
  int fd;
  std::string data;
};

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// A child's pipe carries progress records ('P' and a double) and then its
// result ('O' or 'E' and the text, to the end).
constexpr char kProgress = 'P';
constexpr size_t kProgressRecord = 1 + sizeof(double);

// Reports made in a child: written to the parent when `forward`, else dropped.
std::function<void(double)> ChildProgress(int fd, bool forward) {
  if (!forward) return nullptr;
  return [fd, last = -1.0](double fraction) mutable {
    if (fraction < 1 && fraction - last < 0.005) return;  // a record per half percent at most
    last = fraction;
    char record[kProgressRecord];
    record[0] = kProgress;
    std::memcpy(record + 1, &fraction, sizeof fraction);
    WriteAll(fd, std::string(record, sizeof record));
  };
}

// Hands the progress records at the start of `data` to the parent's listener.
void ForwardProgress(std::string& data) {
  size_t used = 0;
  while (data.size() - used >= kProgressRecord && data[used] == kProgress) {
    double fraction = 0;
    std::memcpy(&fraction, data.data() + used + 1, sizeof fraction);
    ReportProgress(fraction, 1);
    used += kProgressRecord;
  }
  data.erase(0, used);
}

[[noreturn]] void RunChild(int fd, size_t index, bool forward_progress, const std::function<std::string(size_t)>& job) {
  ScopedProgressListener progress(ChildProgress(fd, forward_progress));
  std::string message;
  try {
    message = "O" + job(index);
  } catch (const std::exception& e) {
    message = std::string("E") + e.what();
  } catch (...) {
    message = "Eunknown error";
  }
  WriteAll(fd, message);
  close(fd);
  _exit(0);
}

ChildJobResult Finish(Running& r) {
  close(r.fd);
  int status = 0;
  while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  ChildJobResult result;
  result.status = ChildJobResult::Status::kFailed;
  if (r.data.empty()) {
    result.output = WIFSIGNALED(status) ? "the simulation was killed by signal " + std::to_string(WTERMSIG(status))
                                        : "the simulation ended without a result";
  } else {
    result.status = r.data[0] == 'O' ? ChildJobResult::Status::kOk : ChildJobResult::Status::kFailed;
    result.output = r.data.substr(1);
  }
  return result;
}

}  // namespace

std::vector<ChildJobResult> RunInChildProcesses(const std::vector<size_t>& indices,
                                                const std::function<std::string(size_t)>& job,
                                                const ChildJobOptions& options) {
  std::vector<ChildJobResult> results(indices.size());
  std::vector<Running> running;
  size_t next = 0;
  const int parallel = std::max(1, options.parallel);
  auto stopped = [&] { return options.stop && options.stop(); };
  auto launching = [&] { return !options.may_launch || options.may_launch(); };
  while ((next < indices.size() && launching()) || !running.empty()) {
    while (next < indices.size() && static_cast<int>(running.size()) < parallel && !stopped() && launching()) {
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error("cannot create a pipe for a child process");
      // A child inherits unflushed output and would print it again at its exit.
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      const pid_t parent = getpid();
      const pid_t pid = fork();
      if (pid < 0) throw std::runtime_error("cannot fork a child process");
      if (pid == 0) {
        // A child dies with its parent, also when the parent is killed outright.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);
        close(fds[0]);
        for (const Running& r : running) close(r.fd);
        RunChild(fds[1], indices[next], options.forward_progress && next == 0, job);
      }
      close(fds[1]);
      running.push_back({next, pid, fds[0], {}});
      ++next;
    }
    if (stopped()) {
      for (Running& r : running) {
        kill(r.pid, SIGKILL);
        close(r.fd);
        waitpid(r.pid, nullptr, 0);
      }
      running.clear();
      break;
    }
    std::vector<pollfd> fds;
    for (const Running& r : running) fds.push_back({r.fd, POLLIN, 0});
    const int ready = poll(fds.data(), fds.size(), 100);
    if (ready < 0 && errno != EINTR) throw std::runtime_error("poll failed while waiting for child processes");
    if (ready <= 0) continue;
    for (size_t i = running.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = read(running[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        running[i].data.append(buffer, static_cast<size_t>(n));
        if (options.forward_progress && running[i].slot == 0) ForwardProgress(running[i].data);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      const size_t slot = running[i].slot;
      results[slot] = Finish(running[i]);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      if (options.on_done) options.on_done(slot, results[slot]);
    }
  }
  return results;
}

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace shardlab
