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

// `done` of `total` units of the current work.
void ReportProgress(double done, double total);

}  // namespace shardlab
