// How a shardlab process ends on SIGINT, SIGTERM and SIGHUP. By default such a
// signal removes the temporary file of the output being written (so no partial
// or temporary file is left) and exits at once with 128 + the signal number:
// 130 for Ctrl-C. A command that runs child processes or can still report
// something useful (a tuner, a sweep, real ranks) asks for the signals to
// become a stop request instead: it polls StopRequested(), stops its children,
// cleans up and ends with StopExitCode().
#pragma once

#include <stdexcept>

namespace shardlab {

// Installs the handlers. main() calls it first; the SimGrid platform calls it
// again after creating its engine, which installs a SIGINT handler of its own
// that exits from inside the signal and crashes in shutdown.
void InstallInterruptHandlers();

// From now on SIGINT, SIGTERM and SIGHUP set StopRequested() instead of
// ending the process.
void StopOnInterrupt();
bool StopRequested();
// 128 + the first signal that asked to stop (130 for SIGINT).
int StopExitCode();

// Thrown by work that noticed a stop request and gave up; the CLI ends with
// StopExitCode() without an error message.
class Stopped : public std::runtime_error {
 public:
  Stopped() : std::runtime_error("stopped by a signal") {}
};

// The temporary file an atomic write is filling (nullptr: none). A signal that
// ends the process removes it. Longer paths than PATH_MAX are not registered.
void SetPendingTemporaryFile(const char* path);

}  // namespace shardlab
