// The share of a long computation done, for whoever shows progress. Work that
// can take seconds (the SimGrid engine) reports as it goes; a command that
// draws a progress bar listens for the scope of that work. Without a listener
// a report costs one branch.
#pragma once

#include <functional>

namespace shardlab {

// Calls `listener` with each report (a fraction in [0, 1]) while it lives;
// the previous listener, if any, comes back afterwards.
class ScopedProgressListener {
 public:
  explicit ScopedProgressListener(std::function<void(double)> listener);
  ~ScopedProgressListener();
  ScopedProgressListener(const ScopedProgressListener&) = delete;
  ScopedProgressListener& operator=(const ScopedProgressListener&) = delete;

 private:
  std::function<void(double)> previous_;
};

// Reports made while it lives fill [begin, end] of the enclosing work's
// share: one phase of several (building the strategy graph, then solving it)
// moves one progress line from its first share to its last.
class ScopedProgressRange {
 public:
  ScopedProgressRange(double begin, double end);
  ScopedProgressRange(const ScopedProgressRange&) = delete;
  ScopedProgressRange& operator=(const ScopedProgressRange&) = delete;

 private:
  ScopedProgressListener listener_;
};

// `done` of `total` units of the current work.
void ReportProgress(double done, double total);

}  // namespace shardlab
