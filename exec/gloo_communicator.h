// The Gloo back end: ranks are processes (or threads) on one machine or
// several, connected by TCP (loopback by default) and meeting through a
// rendezvous directory every rank can read. Gloo provides AllReduce,
// AllGather, AllToAll, Broadcast and Barrier; ReduceScatter and the
// point-to-point calls are rings and unbound buffers written here. A call
// that waits longer than the timeout throws, so a hang becomes an error.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "exec/communicator.h"

namespace shardlab::exec {

struct GlooOptions {
  std::string rendezvous_dir;  // shared by all ranks of the world; empty before the first rank starts
  std::string hostname = "127.0.0.1";
  std::chrono::milliseconds timeout{120000};
};

// Joins the world of `size` ranks as `rank`. Every rank must call it.
std::unique_ptr<Communicator> ConnectGlooWorld(int rank, int size, const GlooOptions& options);

}  // namespace shardlab::exec
