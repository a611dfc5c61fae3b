#include "core/util/interrupt.h"

#include <climits>
#include <csignal>
#include <cstring>
#include <initializer_list>
#include <unistd.h>

namespace shardlab {
namespace {

volatile std::sig_atomic_t stop_on_interrupt = 0;
volatile std::sig_atomic_t stop_signal = 0;  // the first signal that asked to stop
// Written outside the handler only while the signals are blocked, so the
// handler never sees half a path.
char pending_file[PATH_MAX + 1] = {0};

void OnSignal(int signal) {
  if (stop_on_interrupt) {
    if (!stop_signal) stop_signal = signal;
    return;
  }
  if (pending_file[0]) ::unlink(pending_file);
  ::_exit(128 + signal);
}

sigset_t EndingSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  return set;
}

bool IgnoredAtStart(int signal) {
  struct sigaction current = {};
  sigaction(signal, nullptr, &current);
  return current.sa_handler == SIG_IGN;
}

}  // namespace

void InstallInterruptHandlers() {
  // A signal ignored when the process started (nohup, a background job) stays
  // ignored, also after SimGrid has replaced the disposition.
  static const bool ignored[3] = {IgnoredAtStart(SIGINT), IgnoredAtStart(SIGTERM), IgnoredAtStart(SIGHUP)};
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  action.sa_mask = EndingSignals();
  const int signals[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; ++i) {
    if (ignored[i]) {
      std::signal(signals[i], SIG_IGN);
    } else {
      sigaction(signals[i], &action, nullptr);
    }
  }
}

void StopOnInterrupt() {
  stop_signal = 0;
  stop_on_interrupt = 1;
}

bool StopRequested() { return stop_signal != 0; }

int StopExitCode() { return 128 + (stop_signal ? stop_signal : SIGINT); }

void SetPendingTemporaryFile(const char* path) {
  const sigset_t ending = EndingSignals();
  sigset_t previous;
  sigprocmask(SIG_BLOCK, &ending, &previous);
  if (path && std::strlen(path) <= PATH_MAX) {
    std::strcpy(pending_file, path);
  } else {
    pending_file[0] = 0;
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);
}

}  // namespace shardlab
