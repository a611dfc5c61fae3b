// One rank's handle on a group of ranks that run collectives together: the
// interface the real back ends (Gloo on CPUs, NCCL on GPUs) implement and the
// plan executor and the micro-benchmarks call. Buffers hold float32 elements;
// a plan's byte counts become ceil(bytes / 4) elements. On Gloo every call
// returns when the operation is complete on this rank; on NCCL it is enqueued
// on the communicator's stream (see cuda_runtime.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>

namespace shardlab::exec {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "gloo" or "nccl"

  // In place: every rank ends with the element-wise sum.
  virtual void AllReduce(float* data, size_t count) = 0;
  // `count` elements from each rank; `output` holds size() * count, rank order.
  virtual void AllGather(const float* input, float* output, size_t count) = 0;
  // `input` holds size() * count; rank r ends with the sum of block r.
  virtual void ReduceScatter(const float* input, float* output, size_t count) = 0;
  // `count` elements to each peer: block p of `input` goes to rank p.
  virtual void AllToAll(const float* input, float* output, size_t count) = 0;
  virtual void Broadcast(float* data, size_t count, int root) = 0;
  // Point to point; a send and the receive that matches it carry the same tag.
  virtual void Send(const float* data, size_t count, int peer, int tag) = 0;
  virtual void Recv(float* data, size_t count, int peer, int tag) = 0;
  virtual void Barrier() = 0;

  // NCCL: the CUDA stream (cudaStream_t) this communicator's calls enqueue
  // on; Gloo ignores it (its calls run on the calling thread).
  virtual void BindStream(void* native_stream) { (void)native_stream; }

  // Collective over this communicator: ranks passing the same color >= 0 form
  // a new communicator, ordered by key (then by rank); color < 0 gives nullptr.
  virtual std::unique_ptr<Communicator> Split(int color, int key) = 0;
};

// Elements of float32 that carry `bytes` (at least one).
inline size_t ElementsFor(double bytes) { return std::max<size_t>(1, static_cast<size_t>(std::ceil(bytes / 4))); }

}  // namespace shardlab::exec
