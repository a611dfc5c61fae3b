// Progress of a long command on stderr, drawn only on a terminal: nothing
// when stderr is piped or redirected (SHARDLAB_PROGRESS=always or never
// overrides; always also draws from the start). One line redrawn at most ten
// times a second, and only once the work has run for half a second: the label, a bar, the share or count done,
// the elapsed time, the ETA and what is running or the best result so far.
// Finish (or the destructor) clears the line.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "core/util/progress_report.h"

namespace shardlab::cli {

class Progress {
 public:
  // Work of `total` items (0: measured as a share, see Update).
  Progress(std::string label, size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // One more item done; `item` names it, `best` is the best result so far.
  void Done(const std::string& item, const std::string& best);
  // Work measured as a share: `fraction` of it done, `status` says what runs.
  void Update(double fraction, const std::string& status = "");
  // Clears the line.
  void Finish();

  // Whether progress is drawn in this process (a terminal, or SHARDLAB_PROGRESS).
  static bool Shown();
  // Clears the line being drawn, if any, so that other output (a warning, a
  // log line) starts at the beginning of a line; the progress is drawn again
  // at its next update.
  static void Interrupt();

 private:
  void Draw(double fraction, const std::string& count, const std::string& note, bool force);

  std::string label_;
  size_t total_ = 0;
  size_t done_ = 0;
  bool shown_ = false;
  bool drawn_ = false;
  double first_draw_ = 0;  // seconds of work before the first draw
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// A progress line for one phase of work that reports a share of itself
// (core/util/progress_report.h: the SimGrid engine, the strategy search).
class PhaseProgress {
 public:
  explicit PhaseProgress(std::string label);

 private:
  Progress progress_;
  ScopedProgressListener listener_;
};

}  // namespace shardlab::cli
