#include "exec/nccl_communicator.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

namespace shardlab::exec {
namespace {

void Check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(fmt::format("NCCL: {}: {}", what, ncclGetErrorString(r)));
}

// Every live communicator of this process, for AbortNcclCommunicators.
std::mutex registry_mutex;
std::vector<ncclComm_t>& Registry() {
  static std::vector<ncclComm_t> comms;
  return comms;
}

void Register(ncclComm_t c) {
  std::lock_guard lock(registry_mutex);
  Registry().push_back(c);
}

bool Unregister(ncclComm_t c) {
  std::lock_guard lock(registry_mutex);
  auto& r = Registry();
  auto it = std::find(r.begin(), r.end(), c);
  if (it == r.end()) return false;  // aborted already
  r.erase(it);
  return true;
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {
    Register(comm_);
    ncclCommUserRank(comm_, &rank_);
    ncclCommCount(comm_, &size_);
    if (cudaMalloc(&flag_, sizeof(float)) != cudaSuccess) throw std::runtime_error("CUDA: cudaMalloc failed");
  }
  ~NcclCommunicator() override {
    if (Unregister(comm_)) ncclCommDestroy(comm_);
    cudaFree(flag_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  void BindStream(void* native_stream) override { stream_ = static_cast<cudaStream_t>(native_stream); }

  void AllReduce(float* data, size_t count) override {
    Check(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream_), "ncclAllReduce");
  }
  void AllGather(const float* input, float* output, size_t count) override {
    Check(ncclAllGather(input, output, count, ncclFloat, comm_, stream_), "ncclAllGather");
  }
  void ReduceScatter(const float* input, float* output, size_t count) override {
    Check(ncclReduceScatter(input, output, count, ncclFloat, ncclSum, comm_, stream_), "ncclReduceScatter");
  }
  void AllToAll(const float* input, float* output, size_t count) override {
    Check(ncclGroupStart(), "ncclGroupStart");
    for (int p = 0; p < size_; ++p) {
      Check(ncclSend(input + static_cast<size_t>(p) * count, count, ncclFloat, p, comm_, stream_), "ncclSend");
      Check(ncclRecv(output + static_cast<size_t>(p) * count, count, ncclFloat, p, comm_, stream_), "ncclRecv");
    }
    Check(ncclGroupEnd(), "ncclGroupEnd");
  }
  void Broadcast(float* data, size_t count, int root) override {
    Check(ncclBroadcast(data, data, count, ncclFloat, root, comm_, stream_), "ncclBroadcast");
  }
  void Send(const float* data, size_t count, int peer, int) override {
    Check(ncclSend(data, count, ncclFloat, peer, comm_, stream_), "ncclSend");
  }
  void Recv(float* data, size_t count, int peer, int) override {
    Check(ncclRecv(data, count, ncclFloat, peer, comm_, stream_), "ncclRecv");
  }
  void Barrier() override {
    AllReduce(flag_, 1);
    if (cudaStreamSynchronize(stream_) != cudaSuccess) throw std::runtime_error("CUDA: barrier failed");
  }

  std::unique_ptr<Communicator> Split(int color, int key) override {
    ncclComm_t child = nullptr;
    Check(ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, nullptr), "ncclCommSplit");
    if (color < 0 || !child) return nullptr;
    return std::make_unique<NcclCommunicator>(child, stream_);
  }

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_ = 0, size_ = 1;
  float* flag_ = nullptr;
};

// Rank 0 writes the unique id (atomically: temp file, then rename); the others wait for it.
ncclUniqueId ExchangeId(int rank, const std::string& dir, std::chrono::milliseconds timeout) {
  ncclUniqueId id;
  const std::filesystem::path path = std::filesystem::path(dir) / "nccl-unique-id";
  if (rank == 0) {
    Check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::filesystem::path temp = path.string() + ".tmp";
    {
      std::ofstream out(temp, std::ios::binary);
      out.write(reinterpret_cast<const char*>(&id), sizeof(id));
      if (!out) throw std::runtime_error("cannot write " + temp.string());
    }
    std::filesystem::rename(temp, path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("rank 0 did not publish the NCCL unique id in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(&id), sizeof(id));
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return id;
}

}  // namespace

std::unique_ptr<Communicator> ConnectNcclWorld(int rank, int size, const std::string& rendezvous_dir,
                                               std::chrono::milliseconds timeout, void* stream) {
  const ncclUniqueId id = ExchangeId(rank, rendezvous_dir, timeout);
  ncclComm_t comm = nullptr;
  Check(ncclCommInitRank(&comm, size, id, rank), "ncclCommInitRank");
  return std::make_unique<NcclCommunicator>(comm, static_cast<cudaStream_t>(stream));
}

void AbortNcclCommunicators() {
  std::lock_guard lock(registry_mutex);
  for (ncclComm_t c : Registry()) ncclCommAbort(c);
  Registry().clear();
}

}  // namespace shardlab::exec
