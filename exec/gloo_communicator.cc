#include "exec/gloo_communicator.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

namespace shardlab::exec {
namespace {

constexpr uint8_t kReduceScatterSlotPrefix = 0x40;
constexpr uint8_t kPointToPointSlotPrefix = 0x41;

// What every communicator split from one world shares.
struct GlooShared {
  std::shared_ptr<gloo::rendezvous::FileStore> store;
  std::shared_ptr<gloo::transport::Device> device;
  std::chrono::milliseconds timeout{0};
  int splits = 0;  // world-wide sequence number of Split calls (same on every rank)
};

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<GlooShared> shared, std::shared_ptr<gloo::Context> context, std::string name)
      : shared_(std::move(shared)), context_(std::move(context)), name_(std::move(name)) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  std::string backend() const override { return "gloo"; }

  void AllReduce(float* data, size_t count) override {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(data, count);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTimeout(shared_->timeout);
    gloo::allreduce(opts);
  }

  void AllGather(const float* input, float* output, size_t count) override {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(const_cast<float*>(input), count);
    opts.setOutput(output, count * static_cast<size_t>(size()));
    opts.setTimeout(shared_->timeout);
    gloo::allgather(opts);
  }

  // A ring: in step i rank r sends its partial sum of block r-i-1 to the
  // right and adds the left's partial sum of block r-i-2; after n-1 steps
  // block r holds every rank's contribution.
  void ReduceScatter(const float* input, float* output, size_t count) override {
    const int n = size(), r = rank();
    if (n == 1) {
      std::memcpy(output, input, count * sizeof(float));
      return;
    }
    work_.assign(input, input + count * static_cast<size_t>(n));
    incoming_.resize(count);
    const size_t block_bytes = count * sizeof(float);
    auto send_buffer = context_->createUnboundBuffer(work_.data(), work_.size() * sizeof(float));
    auto recv_buffer = context_->createUnboundBuffer(incoming_.data(), block_bytes);
    const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, static_cast<uint32_t>(context_->nextSlot()));
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    auto block = [n](int b) { return static_cast<size_t>(((b % n) + n) % n); };
    for (int i = 0; i < n - 1; ++i) {
      const size_t send_block = block(r - i - 1), recv_block = block(r - i - 2);
      send_buffer->send(right, slot, send_block * block_bytes, block_bytes);
      recv_buffer->recv(left, slot, 0, block_bytes);
      Wait(recv_buffer->waitRecv(shared_->timeout), "ReduceScatter receive");
      Wait(send_buffer->waitSend(shared_->timeout), "ReduceScatter send");
      float* target = work_.data() + recv_block * count;
      for (size_t e = 0; e < count; ++e) target[e] += incoming_[e];
    }
    std::memcpy(output, work_.data() + static_cast<size_t>(r) * count, block_bytes);
  }

  void AllToAll(const float* input, float* output, size_t count) override {
    gloo::AlltoallOptions opts(context_);
    opts.setInput(const_cast<float*>(input), count * static_cast<size_t>(size()));
    opts.setOutput(output, count * static_cast<size_t>(size()));
    opts.setTimeout(shared_->timeout);
    gloo::alltoall(opts);
  }

  void Broadcast(float* data, size_t count, int root) override {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(data, count);
    opts.setRoot(root);
    opts.setTimeout(shared_->timeout);
    gloo::broadcast(opts);
  }

  void Send(const float* data, size_t count, int peer, int tag) override {
    auto buffer = context_->createUnboundBuffer(const_cast<float*>(data), count * sizeof(float));
    buffer->send(peer, gloo::Slot::build(kPointToPointSlotPrefix, static_cast<uint32_t>(tag)));
    Wait(buffer->waitSend(shared_->timeout), "send");
  }

  void Recv(float* data, size_t count, int peer, int tag) override {
    auto buffer = context_->createUnboundBuffer(data, count * sizeof(float));
    buffer->recv(peer, gloo::Slot::build(kPointToPointSlotPrefix, static_cast<uint32_t>(tag)));
    Wait(buffer->waitRecv(shared_->timeout), "receive");
  }

  void Barrier() override {
    gloo::BarrierOptions opts(context_);
    opts.setTimeout(shared_->timeout);
    gloo::barrier(opts);
  }

  std::unique_ptr<Communicator> Split(int color, int key) override {
    const int n = size();
    std::vector<int64_t> mine = {color, key, rank()}, all(3 * static_cast<size_t>(n));
    gloo::AllgatherOptions opts(context_);
    opts.setInput(mine.data(), mine.size());
    opts.setOutput(all.data(), all.size());
    opts.setTimeout(shared_->timeout);
    gloo::allgather(opts);
    const int sequence = shared_->splits++;
    if (color < 0) return nullptr;
    std::vector<std::pair<int64_t, int64_t>> members;  // (key, parent rank) of this color
    for (int p = 0; p < n; ++p)
      if (all[3 * p] == color) members.emplace_back(all[3 * p + 1], all[3 * p + 2]);
    std::sort(members.begin(), members.end());
    const int position = static_cast<int>(
        std::find(members.begin(), members.end(), std::make_pair<int64_t, int64_t>(key, rank())) - members.begin());
    const std::string name = fmt::format("{}/split{}.{}", name_, sequence, color);
    auto context = std::make_shared<gloo::rendezvous::Context>(position, static_cast<int>(members.size()));
    context->setTimeout(shared_->timeout);
    gloo::rendezvous::PrefixStore prefixed(name, *shared_->store);
    context->connectFullMesh(prefixed, shared_->device);
    return std::make_unique<GlooCommunicator>(shared_, std::move(context), name);
  }

 private:
  void Wait(bool ok, const char* what) const {
    if (!ok) throw std::runtime_error(fmt::format("gloo: {} on {} aborted", what, name_));
  }

  std::shared_ptr<GlooShared> shared_;
  std::shared_ptr<gloo::Context> context_;
  std::string name_;
  std::vector<float> work_, incoming_;
};

}  // namespace

std::unique_ptr<Communicator> ConnectGlooWorld(int rank, int size, const GlooOptions& options) {
  if (options.rendezvous_dir.empty()) throw std::invalid_argument("gloo: no rendezvous directory");
  auto shared = std::make_shared<GlooShared>();
  shared->store = std::make_shared<gloo::rendezvous::FileStore>(options.rendezvous_dir);
  gloo::transport::tcp::attr attr;
  attr.hostname = options.hostname;
  shared->device = gloo::transport::tcp::CreateDevice(attr);
  shared->timeout = options.timeout;
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(options.timeout);
  gloo::rendezvous::PrefixStore prefixed("world", *shared->store);
  context->connectFullMesh(prefixed, shared->device);
  return std::make_unique<GlooCommunicator>(shared, std::move(context), "world");
}

}  // namespace shardlab::exec
