// The MPI world of a sweep run under `mpirun`: each rank evaluates its share
// of the candidates (in child processes, before MPI starts, so MPI never sees
// a fork) and the root gathers every rank's results. Without MPI (or outside
// mpirun) the world is this one process.
#pragma once

#include <string>
#include <vector>

namespace shardlab::exec {

class MpiWorld {
 public:
  // Rank and size from the launcher's environment (OpenMPI's
  // OMPI_COMM_WORLD_RANK/SIZE, PMIx's PMIX_RANK), readable before MPI_Init.
  MpiWorld();
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }

  // Starts MPI and gathers one string from every rank on the root (rank
  // order); other ranks get {}. A world of one returns {mine}.
  std::vector<std::string> GatherOnRoot(const std::string& mine);

  // Whether this binary can join a world of more than one rank.
  static bool Supported();

 private:
  int rank_ = 0;
  int size_ = 1;
  bool started_ = false;
};

}  // namespace shardlab::exec
