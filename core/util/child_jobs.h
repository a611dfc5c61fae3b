// Runs jobs in forked child processes, a few at a time. SimGrid allows one
// engine per process, so every simulation of a sweep or a tuner runs in its
// own child; running several at once uses the machine's cores. A job returns
// a string (its result, e.g. JSON); an exception becomes the job's error.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace shardlab {

struct ChildJobResult {
  enum class Status { kNotRun, kOk, kFailed };
  Status status = Status::kNotRun;
  std::string output;  // the job's result, or its error message
};

struct ChildJobOptions {
  int parallel = 1;  // children at once
  // Called in the parent as each job ends (with its position in `indices`), in completion order.
  std::function<void(size_t, const ChildJobResult&)> on_done;
  // Polled while jobs run; once true, running children are killed and the
  // jobs not finished stay kNotRun.
  std::function<bool()> stop;
  // Polled before each launch; once false, no more jobs start (a time
  // budget) and the running ones finish.
  std::function<bool()> may_launch;
  // Whether the first job's progress (core/util/progress_report.h) reaches the
  // parent's listener: the whole work's where the jobs move alike (the ranks of
  // one program), else that job's alone. Every other child's reports are
  // dropped, so no child draws over the parent's output.
  bool forward_progress = false;
};

// Runs job(i) for every i in `indices`; the result of indices[k] is at [k].
std::vector<ChildJobResult> RunInChildProcesses(const std::vector<size_t>& indices,
                                                const std::function<std::string(size_t)>& job,
                                                const ChildJobOptions& options);

// The number of cores this process may use.
int AvailableCores();

}  // namespace shardlab
