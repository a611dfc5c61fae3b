#include "exec/mpi_world.h"

#include <cstdlib>
#include <stdexcept>

#ifdef SHARDLAB_HAVE_MPI
#include <mpi.h>
#endif

namespace shardlab::exec {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

}  // namespace

MpiWorld::MpiWorld() {
  size_ = EnvInt("OMPI_COMM_WORLD_SIZE", EnvInt("PMI_SIZE", 1));
  rank_ = EnvInt("OMPI_COMM_WORLD_RANK", EnvInt("PMI_RANK", 0));
  if (size_ > 1 && !Supported())
    throw std::runtime_error("started by mpirun with " + std::to_string(size_) +
                             " ranks, but this shardlab was built without MPI (Debian: libopenmpi-dev)");
}

MpiWorld::~MpiWorld() {
#ifdef SHARDLAB_HAVE_MPI
  if (started_) MPI_Finalize();
#endif
}

bool MpiWorld::Supported() {
#ifdef SHARDLAB_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::vector<std::string> MpiWorld::GatherOnRoot(const std::string& mine) {
  if (size_ == 1) return {mine};
#ifdef SHARDLAB_HAVE_MPI
  if (!started_) {
    MPI_Init(nullptr, nullptr);
    started_ = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(root() ? size_ : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(lengths.size(), 0);
  int total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = total;
    total += lengths[i];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (size_t i = 0; i < lengths.size(); ++i) out.push_back(all.substr(offsets[i], lengths[i]));
  return out;
#else
  return {mine};
#endif
}

}  // namespace shardlab::exec
