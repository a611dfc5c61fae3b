// Runs a simulation for the window without blocking it: on a worker thread
// that forks one child process (SimGrid allows one engine per process, and a
// child can be killed at once when the user cancels). The child hands back a
// simulation document (SimulateDocument); the worker turns it into a RunView.
#pragma once

#include <QObject>
#include <QPointer>
#include <QThread>
#include <atomic>
#include <memory>

#include "gui/run_loader.h"

namespace shardlab::gui {

class SimulationWorker : public QObject {
  Q_OBJECT

 public:
  explicit SimulationWorker(QObject* parent = nullptr);
  ~SimulationWorker() override;

  // Starts simulating `run` with `engine` (analytical or simgrid); false when one is running.
  bool Start(const RunSpec& run, Engine engine);
  void Cancel();
  // Until the outcome has been signalled.
  bool running() const { return running_; }
  // Waits for the running simulation to end (tests and shutdown).
  void Wait();

 signals:
  void finished(std::shared_ptr<shardlab::gui::RunView> view);
  void failed(QString message);
  void cancelled();

 private:
  QPointer<QThread> thread_;  // deletes itself when it ends
  std::atomic<bool> cancel_{false};
  bool running_ = false;
};

}  // namespace shardlab::gui
