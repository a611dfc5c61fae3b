// A rank's device as the plan executor and the benchmarks drive it: streams
// that run work in submission order (compute, communication and pipeline
// sends, as in the simulator), kernels of given shapes, scratch buffers in the
// device's memory, and events that order streams and time them. The CPU
// runtime runs each stream on a thread; the CUDA runtime maps streams to CUDA
// streams and events to CUDA events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace shardlab::exec {

enum class Stream { kCompute = 0, kCommunication = 1, kSend = 2 };
constexpr int kStreamCount = 3;

class Runtime {
 public:
  using Event = int;

  virtual ~Runtime() = default;
  virtual std::string name() const = 0;    // "cpu" or "cuda"
  virtual std::string device() const = 0;  // e.g. the CPU or GPU model

  // Makes `elements` float32 of scratch available on `stream` (two buffers,
  // input and output). Call before submitting work that uses them.
  virtual void Reserve(Stream stream, size_t elements) = 0;
  virtual float* Input(Stream stream) = 0;
  virtual float* Output(Stream stream) = 0;

  // C[m,n] = A[m,k] * B[k,n] in float32 (CPU) or bfloat16 with float32
  // accumulation (CUDA tensor cores), `batch` independent products at once
  // (one strided-batched cuBLAS call, as stacks run attention's per-head
  // products and a mixture of experts' experts).
  virtual void Gemm(Stream stream, int64_t m, int64_t n, int64_t k, int batch = 1) = 0;
  // Reads and writes `bytes` in total (a copy of bytes / 2).
  virtual void MemoryPass(Stream stream, double bytes) = 0;
  // Runs `work` in `stream`'s order: on the stream's thread (CPU), or now on
  // the calling thread, where it enqueues onto the stream (CUDA: communicators
  // made for that stream).
  virtual void Submit(Stream stream, std::function<void()> work) = 0;

  // An event at the current end of `stream`; Wait makes `stream` wait for it.
  virtual Event Record(Stream stream) = 0;
  virtual void Wait(Stream stream, Event event) = 0;
  // Waits for every stream; rethrows the first failure of any stream.
  virtual void Synchronize() = 0;
  // Seconds from `from` to `to` (both completed).
  virtual double Elapsed(Event from, Event to) = 0;
  // The CUDA stream behind `stream` (for Communicator::BindStream); nullptr on CPU.
  virtual void* NativeStream(Stream stream) {
    (void)stream;
    return nullptr;
  }

  // Forgets every event (between steps).
  virtual void ResetEvents() = 0;
};

}  // namespace shardlab::exec
