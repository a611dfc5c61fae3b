// Starts the ranks of a real run on this machine: one child process per rank
// (NCCL allows one rank per GPU, and CUDA contexts and SimGrid state stay out
// of the parent), a fresh rendezvous directory they meet in, the back end's
// world communicator and runtime in each, and the first failure stopping the
// others. Each rank's body returns a string (JSON) the parent collects.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "exec/communicator.h"
#include "exec/runtime.h"

namespace shardlab::exec {

struct RankContext {
  int rank = 0;
  int size = 1;
  Communicator& world;
  Runtime& runtime;
};

// The most ranks one machine runs (one process each).
inline constexpr int kMaxLocalRanks = 64;

struct LaunchOptions {
  std::string backend = "gloo";  // gloo: CPU runtime + Gloo; nccl: CUDA runtime + NCCL (GPU rank % GPUs)
  int ranks = 1;
  std::chrono::milliseconds timeout{120000};  // a collective waiting longer fails
};

// Runs body on every rank; returns the ranks' results in rank order. Throws
// with the first failing rank's message.
std::vector<std::string> RunRanks(const LaunchOptions& options, const std::function<std::string(RankContext&)>& body);

// Whether `backend` can run here; when not, `why` says so in one line
// (NCCL: not built, or no GPU). Probes CUDA in a child process, so that this
// process stays free to fork ranks.
bool BackendAvailable(const std::string& backend, std::string* why);

}  // namespace shardlab::exec
