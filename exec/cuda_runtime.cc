#include "exec/cuda_runtime.h"

#include <algorithm>
#include <array>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <fmt/format.h>

#include "exec/nccl_communicator.h"

namespace shardlab::exec {
namespace {

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("CUDA: {}: {}", what, cudaGetErrorString(e)));
}

void Check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("cuBLAS: {}: status {}", what, static_cast<int>(s)));
}

// Random bfloat16 values in [-1, 1) (read two at a time they are floats in
// the same range). GEMMs run on them, not on zeros: an H100 multiplies zero
// matrices about 15% faster than random ones (less switching power, higher
// clocks), which would calibrate a peak no training step reaches.
const std::vector<__nv_bfloat16>& RandomPattern() {
  static const std::vector<__nv_bfloat16> pattern = [] {
    std::vector<__nv_bfloat16> values(size_t{2} << 20);
    std::mt19937 random(1234);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (auto& v : values) v = __float2bfloat16(uniform(random));
    return values;
  }();
  return pattern;
}

// A device allocation that grows on demand, filled with RandomPattern().
class DeviceBuffer {
 public:
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  void* Get(size_t bytes) {
    if (bytes > size_) {
      if (data_) Check(cudaFree(data_), "cudaFree");
      data_ = nullptr;
      Check(cudaMalloc(&data_, bytes), "cudaMalloc");
      const auto& pattern = RandomPattern();
      const size_t chunk = pattern.size() * sizeof(pattern[0]);
      for (size_t offset = 0; offset < bytes; offset += chunk)
        Check(cudaMemcpy(static_cast<char*>(data_) + offset, pattern.data(), std::min(chunk, bytes - offset),
                         cudaMemcpyHostToDevice),
              "cudaMemcpy");
      size_ = bytes;
    }
    return data_;
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

struct StreamState {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  DeviceBuffer input, output, a, b, c, copy_from, copy_to;
  size_t elements = 0;
};

class CudaRuntime : public Runtime {
 public:
  CudaRuntime(int rank, std::chrono::milliseconds timeout) : timeout_(timeout) {
    int count = 0;
    Check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count == 0) throw std::runtime_error("no CUDA GPU");
    device_ = rank % count;
    Check(cudaSetDevice(device_), "cudaSetDevice");
    cudaDeviceProp prop{};
    Check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    name_ = prop.name;
    for (StreamState& s : streams_) {
      Check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
      Check(cublasCreate(&s.blas), "cublasCreate");
      Check(cublasSetStream(s.blas, s.stream), "cublasSetStream");
      Check(cublasSetMathMode(s.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    }
  }

  ~CudaRuntime() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (StreamState& s : streams_) {
      cublasDestroy(s.blas);
      cudaStreamDestroy(s.stream);
    }
  }

  std::string name() const override { return "cuda"; }
  std::string device() const override { return name_; }

  void Reserve(Stream stream, size_t elements) override {
    StreamState& s = State(stream);
    s.input.Get(elements * sizeof(float));
    s.output.Get(elements * sizeof(float));
    s.elements = std::max(s.elements, elements);
  }
  float* Input(Stream stream) override { return static_cast<float*>(State(stream).input.Get(0)); }
  float* Output(Stream stream) override { return static_cast<float*>(State(stream).output.Get(0)); }

  void Gemm(Stream stream, int64_t m, int64_t n, int64_t k, int batch) override {
    StreamState& s = State(stream);
    const size_t e = sizeof(__nv_bfloat16);
    const auto count = static_cast<size_t>(std::max(batch, 1));
    void* a = s.a.Get(count * static_cast<size_t>(m * k) * e);
    void* b = s.b.Get(count * static_cast<size_t>(k * n) * e);
    void* c = s.c.Get(count * static_cast<size_t>(m * n) * e);
    const float alpha = 1, beta = 0;
    // Column-major: C^T[n,m] = B^T[n,k] A^T[k,m].
    const int cm = static_cast<int>(n), cn = static_cast<int>(m), ck = static_cast<int>(k);
    if (count == 1) {
      Check(cublasGemmEx(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, cm, cn, ck, &alpha, b, CUDA_R_16BF, cm, a, CUDA_R_16BF, ck,
                         &beta, c, CUDA_R_16BF, cm, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
      return;
    }
    Check(cublasGemmStridedBatchedEx(s.blas, CUBLAS_OP_N, CUBLAS_OP_N, cm, cn, ck, &alpha, b, CUDA_R_16BF, cm, k * n, a,
                                     CUDA_R_16BF, ck, m * k, &beta, c, CUDA_R_16BF, cm, m * n, static_cast<int>(count),
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmStridedBatchedEx");
  }

  void MemoryPass(Stream stream, double bytes) override {
    StreamState& s = State(stream);
    const size_t half = static_cast<size_t>(std::max(bytes / 2, 1.0));
    void* from = s.copy_from.Get(half);
    void* to = s.copy_to.Get(half);
    Check(cudaMemcpyAsync(to, from, half, cudaMemcpyDeviceToDevice, s.stream), "cudaMemcpyAsync");
  }

  void Submit(Stream, std::function<void()> work) override { work(); }

  Event Record(Stream stream) override {
    cudaEvent_t e;
    Check(cudaEventCreate(&e), "cudaEventCreate");
    Check(cudaEventRecord(e, State(stream).stream), "cudaEventRecord");
    events_.push_back(e);
    return static_cast<Event>(events_.size() - 1);
  }

  void Wait(Stream stream, Event event) override {
    Check(cudaStreamWaitEvent(State(stream).stream, events_.at(event), 0), "cudaStreamWaitEvent");
  }

  // Polls the streams; past the timeout the communicators are aborted.
  void Synchronize() override {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (StreamState& s : streams_) {
      while (true) {
        const cudaError_t e = cudaStreamQuery(s.stream);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) Check(e, "cudaStreamQuery");
        if (std::chrono::steady_clock::now() > deadline) {
          AbortNcclCommunicators();
          throw std::runtime_error(
              fmt::format("GPU work did not finish within {} s; NCCL communicators aborted", timeout_.count() / 1000));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  double Elapsed(Event from, Event to) override {
    float ms = 0;
    Check(cudaEventElapsedTime(&ms, events_.at(from), events_.at(to)), "cudaEventElapsedTime");
    return ms / 1e3;
  }

  void ResetEvents() override {
    Synchronize();
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    events_.clear();
  }

  void* NativeStream(Stream stream) override { return State(stream).stream; }

 private:
  StreamState& State(Stream s) { return streams_[static_cast<int>(s)]; }

  std::chrono::milliseconds timeout_;
  int device_ = 0;
  std::string name_;
  std::array<StreamState, kStreamCount> streams_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

std::unique_ptr<Runtime> MakeCudaRuntime(int rank, std::chrono::milliseconds timeout) {
  return std::make_unique<CudaRuntime>(rank, timeout);
}

std::string CudaDeviceProblem() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA GPU: ") + cudaGetErrorString(e);
  if (count == 0) return "no CUDA GPU on this machine";
  return "";
}

std::map<std::string, std::string> CudaVersions() {
  std::map<std::string, std::string> v;
  int runtime = 0, driver = 0, nccl = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  ncclGetVersion(&nccl);
  v["cuda_runtime"] = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);
  v["cuda_driver"] = fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
  v["nccl"] = fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100);
  v["cublas"] = fmt::format("{}.{}.{}", CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
  return v;
}

}  // namespace shardlab::exec
