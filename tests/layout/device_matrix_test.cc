#include "core/layout/device_matrix.h"

#include <catch2/catch.hpp>

namespace shardlab {
namespace {

TEST_CASE("ranks are laid out row-major in the device matrix") {
  const DeviceMatrix m({2, 2, 3});
  CHECK(m.Coordinates(5) == std::vector<int64_t>{0, 1, 2});
  CHECK(m.RankAt({1, 0, 1}) == 7);
  // MindSpore's example: rank 5 of [2,2,3] has groups {5,11}, {2,5}, {3,4,5}.
  CHECK(m.GroupAlongDim(5, 0) == std::vector<int64_t>{5, 11});
  CHECK(m.GroupAlongDim(5, 1) == std::vector<int64_t>{2, 5});
  CHECK(m.GroupAlongDim(5, 2) == std::vector<int64_t>{3, 4, 5});
}

TEST_CASE("groups by tensor map work for unsorted rank lists") {
  // MindSpore's test: ranks [10,3,2,9,11,100,1,0], shape [4,2], rank 0, map [-1,0] -> [3,9,100,0].
  const DeviceMatrix m({4, 2}, {10, 3, 2, 9, 11, 100, 1, 0});
  CHECK(m.GroupByTensorMap(0, {-1, 0}) == std::vector<int64_t>{3, 9, 100, 0});
  CHECK(m.GroupByTensorMap(0, {1, 0}) == std::vector<int64_t>{0});
  CHECK(m.GroupByTensorMap(0, {-1, -1}).size() == 8);
}

TEST_CASE("device matrices reject bad input") {
  CHECK_THROWS(DeviceMatrix({2, 0}));
  CHECK_THROWS(DeviceMatrix({2, 2}, {0, 1, 2}));
  CHECK_THROWS(DeviceMatrix({2, 2}).Coordinates(7));
}

}  // namespace
}  // namespace shardlab
