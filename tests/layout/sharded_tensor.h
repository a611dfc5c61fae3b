// A tensor of small integers held per rank in memory, to execute lowered
// redistribution operators for real and compare every rank's data with the
// slice the target layout assigns it. The proof that redistribution is right.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/layout/redistribution.h"

namespace shardlab::testing {

struct LocalTensor {
  Shape shape;
  std::vector<int64_t> values;  // row-major
};

// The slice of the full tensor 0, 1, 2, ... (row-major) that `rank` holds under `layout`.
LocalTensor SliceFor(const TensorLayout& layout, int64_t rank);

// Runs `ops` on every rank's tensor (ranks 0..devices-1) and returns the result.
std::map<int64_t, LocalTensor> Execute(const std::vector<RedistOp>& ops, std::map<int64_t, LocalTensor> tensors);

}  // namespace shardlab::testing
