#include "exec/cpu_runtime.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <Eigen/Core>

namespace shardlab::exec {
namespace {

using Clock = std::chrono::steady_clock;

// Work a stream's thread owns: scratch buffers and the operands of its kernels.
struct StreamMemory {
  std::vector<float> input, output;
  Eigen::MatrixXf a, b, c;
  std::vector<char> copy_from, copy_to;
};

class CpuRuntime : public Runtime {
 public:
  CpuRuntime() {
    for (int s = 0; s < kStreamCount; ++s) threads_[s] = std::thread([this, s] { Loop(s); });
  }

  ~CpuRuntime() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (auto& t : threads_) t.join();
  }

  std::string name() const override { return "cpu"; }
  std::string device() const override { return CpuModelName(); }

  void Reserve(Stream stream, size_t elements) override {
    Synchronize();  // no work may be using the buffers while they move
    StreamMemory& m = memory_[Index(stream)];
    if (m.input.size() < elements) {
      m.input.assign(elements, 1.0f);
      m.output.assign(elements, 0.0f);
    }
  }
  float* Input(Stream stream) override { return memory_[Index(stream)].input.data(); }
  float* Output(Stream stream) override { return memory_[Index(stream)].output.data(); }

  void Gemm(Stream stream, int64_t m, int64_t n, int64_t k, int batch) override {
    StreamMemory* mem = &memory_[Index(stream)];
    Submit(stream, [mem, m, n, k, batch] {
      if (mem->a.rows() != m || mem->a.cols() != k) mem->a = Eigen::MatrixXf::Constant(m, k, 0.5f);
      if (mem->b.rows() != k || mem->b.cols() != n) mem->b = Eigen::MatrixXf::Constant(k, n, 0.25f);
      mem->c.resize(m, n);
      for (int r = 0; r < batch; ++r) mem->c.noalias() = mem->a * mem->b;
    });
  }

  void MemoryPass(Stream stream, double bytes) override {
    StreamMemory* mem = &memory_[Index(stream)];
    const size_t half = static_cast<size_t>(std::max(bytes / 2, 1.0));
    Submit(stream, [mem, half] {
      if (mem->copy_from.size() < half) {
        mem->copy_from.assign(half, 1);
        mem->copy_to.assign(half, 0);
      }
      std::memcpy(mem->copy_to.data(), mem->copy_from.data(), half);
    });
  }

  void Submit(Stream stream, std::function<void()> work) override {
    {
      std::lock_guard lock(mutex_);
      queues_[Index(stream)].push_back(std::move(work));
      ++pending_;
    }
    changed_.notify_all();
  }

  Event Record(Stream stream) override {
    Event e;
    {
      std::lock_guard lock(mutex_);
      e = static_cast<Event>(events_.size());
      events_.push_back({Clock::time_point{}, false});
    }
    Submit(stream, [this, e] {
      std::lock_guard lock(mutex_);
      events_[e] = {Clock::now(), true};
      changed_.notify_all();
    });
    return e;
  }

  void Wait(Stream stream, Event event) override {
    Submit(stream, [this, event] {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return events_[event].done || error_; });
      if (!events_[event].done) throw std::runtime_error("a stream failed");
    });
  }

  void Synchronize() override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return pending_ == 0; });
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

  double Elapsed(Event from, Event to) override {
    std::lock_guard lock(mutex_);
    return std::chrono::duration<double>(events_.at(to).time - events_.at(from).time).count();
  }

  void ResetEvents() override {
    Synchronize();
    std::lock_guard lock(mutex_);
    events_.clear();
  }

 private:
  struct EventSlot {
    Clock::time_point time;
    bool done = false;
  };

  static int Index(Stream s) { return static_cast<int>(s); }

  // Runs the stream's work in order; after a failure the rest is skipped (and
  // counted done) so that Synchronize returns and reports it.
  void Loop(int s) {
    std::unique_lock lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || !queues_[s].empty(); });
      if (queues_[s].empty()) return;
      std::function<void()> work = std::move(queues_[s].front());
      queues_[s].pop_front();
      const bool skip = error_ != nullptr;
      lock.unlock();
      std::exception_ptr failure;
      if (!skip) {
        try {
          work();
        } catch (...) {
          failure = std::current_exception();
        }
      }
      lock.lock();
      if (failure && !error_) error_ = failure;
      --pending_;
      changed_.notify_all();
    }
  }

  std::array<std::thread, kStreamCount> threads_;
  std::array<StreamMemory, kStreamCount> memory_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::array<std::deque<std::function<void()>>, kStreamCount> queues_;
  std::vector<EventSlot> events_;
  size_t pending_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
};

}  // namespace

std::unique_ptr<Runtime> MakeCpuRuntime() { return std::make_unique<CpuRuntime>(); }

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

}  // namespace shardlab::exec
