// Where a pipeline stage's devices sit among the cluster's global ranks: the
// stack's rank order (SoftwareStack::rank_order) as a closed form. A stage's
// devices are numbered 0..devices_per_stage-1 in the order of its device
// matrices (data, context, tensor parallel, the last innermost); blocks of
// `block` consecutive local devices stay consecutive ranks, and the stages
// interleave between the blocks:
//   rank = local % block + block x (stage + stages x (local / block)).
// block = devices_per_stage is the stages-outermost order (a stage is a
// block of consecutive ranks); block = the tensor-parallel size is
// Megatron's tp-pp-dp.
#pragma once

#include <cstdint>
#include <vector>

namespace shardlab {

struct RunSpec;

struct RankPlacement {
  int64_t stages = 1;
  int64_t devices_per_stage = 1;
  int64_t block = 1;  // consecutive local devices kept consecutive; divides devices_per_stage

  // Stages outermost: stage s holds ranks [s x devices_per_stage, (s + 1) x devices_per_stage).
  static RankPlacement Contiguous(int64_t stages, int64_t devices_per_stage) {
    return {stages, devices_per_stage, devices_per_stage};
  }

  int64_t Rank(int64_t stage, int64_t local) const {
    return local % block + block * (stage + stages * (local / block));
  }
  int64_t StageOf(int64_t rank) const { return rank / block % stages; }
  int64_t LocalOf(int64_t rank) const { return rank % block + block * (rank / block / stages); }
  // A stage's devices' global ranks, in local order.
  std::vector<int64_t> StageRanks(int64_t stage) const;
  // Whether every stage is one block of consecutive ranks.
  bool contiguous() const { return block == devices_per_stage; }

  bool operator==(const RankPlacement&) const = default;
};

// The run's placement: its stack's rank_order over its stages (tp-pp-dp's
// blocks are model_parallel devices, which ReadRunSpec checked).
RankPlacement PlacementOf(const RunSpec& run);

}  // namespace shardlab
