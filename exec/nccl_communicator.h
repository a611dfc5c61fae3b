// The NCCL back end: one process per GPU, the world's unique id passed
// through a rendezvous directory, communicators split per group with
// ncclCommSplit, every call enqueued on the CUDA stream the communicator is
// bound to. Point-to-point calls match in order (NCCL has no tags).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "exec/communicator.h"

namespace shardlab::exec {

std::unique_ptr<Communicator> ConnectNcclWorld(int rank, int size, const std::string& rendezvous_dir,
                                               std::chrono::milliseconds timeout, void* stream);

// Aborts every communicator of this process (after a timeout).
void AbortNcclCommunicators();

}  // namespace shardlab::exec
