#include "gui/simulation_worker.h"

#include <functional>

#include "core/util/child_jobs.h"

namespace shardlab::gui {

SimulationWorker::SimulationWorker(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<RunView>>("std::shared_ptr<shardlab::gui::RunView>");
}

SimulationWorker::~SimulationWorker() {
  Cancel();
  Wait();
}

bool SimulationWorker::Start(const RunSpec& run, Engine engine) {
  if (running_) return false;
  running_ = true;
  cancel_ = false;
  // The outcome reaches the window's thread: running() clears, then the signal.
  auto post = [this](std::function<void()> signal) {
    QMetaObject::invokeMethod(
        this,
        [this, signal] {
          running_ = false;
          signal();
        },
        Qt::QueuedConnection);
  };
  thread_ = QThread::create([this, run, engine, post] {
    ChildJobOptions options;
    options.stop = [this] { return cancel_.load(); };
    const auto results = RunInChildProcesses(
        {0}, [&](size_t) { return SimulateDocument(run, engine).dump(); }, options);
    const ChildJobResult& r = results[0];
    if (r.status == ChildJobResult::Status::kNotRun) return post([this] { emit cancelled(); });
    if (r.status == ChildJobResult::Status::kFailed) {
      const QString message = QString::fromStdString(r.output);
      return post([this, message] { emit failed(message); });
    }
    try {
      auto view = std::make_shared<RunView>(ViewFromResultDocument(nlohmann::json::parse(r.output), run.file));
      post([this, view] { emit finished(view); });
    } catch (const std::exception& e) {
      const QString message = e.what();
      post([this, message] { emit failed(message); });
    }
  });
  connect(thread_, &QThread::finished, thread_, &QObject::deleteLater);
  thread_->start();
  return true;
}

void SimulationWorker::Cancel() { cancel_ = true; }

void SimulationWorker::Wait() {
  if (thread_) thread_->wait();
}

}  // namespace shardlab::gui
