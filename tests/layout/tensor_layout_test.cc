#include "core/layout/tensor_layout.h"

#include <catch2/catch.hpp>

namespace shardlab {
namespace {

TEST_CASE("slice shapes and replication follow the tensor map") {
  const TensorLayout l({2, 1, 4}, {2, 1}, {128, 64});  // seed 004's X
  CHECK(l.SliceShape() == Shape{64, 64});
  CHECK(l.ReplicaCount() == 4);
  const TensorLayout w({2, 1, 4}, {1, 0}, {64, 32});
  CHECK(w.SliceShape() == Shape{64, 8});
  CHECK(w.ReplicaCount() == 2);
}

TEST_CASE("layouts check their rules") {
  CHECK_THROWS_WITH(TensorLayout({2, 4}, {2, -1}, {8, 8}), Catch::Contains("names device dimension 2"));
  CHECK_THROWS_WITH(TensorLayout({2, 4}, {0, 0}, {8, 8}), Catch::Contains("twice"));
  CHECK_THROWS_WITH(TensorLayout({2, 4}, {0}, {8, 8}), Catch::Contains("has 1 entries but the tensor has 2"));
  CHECK_THROWS_WITH(TensorLayout({2, 4}, {1, 0}, {8, 6}), Catch::Contains("cannot be split into 4"));
}

TEST_CASE("normalisation drops size-1 device dimensions") {
  CHECK(TensorLayout({16, 1, 1}, {2, 0}, {32, 8}).Normalized() == TensorLayout({16}, {0, -1}, {32, 8}));
  CHECK(TensorLayout({1, 1, 1}, {2, 0}, {4, 4}).Normalized() == TensorLayout({}, {-1, -1}, {4, 4}));
  CHECK(TensorLayout({2, 1, 4}, {2, 0}, {8, 8}).Normalized() == TensorLayout({2, 4}, {1, 0}, {8, 8}));
}

TEST_CASE("squeezing drops unsplit size-1 dimensions") {
  CHECK(TensorLayout({8}, {0, -1, -1, -1}, {128, 64, 1, 1}).Squeezed() == TensorLayout({8}, {0, -1}, {128, 64}));
  CHECK(TensorLayout({8}, {-1}, {1}).Squeezed() == TensorLayout({8}, {-1}, {1}));
}

TEST_CASE("expanding the device arrangement factors split dimensions") {
  // MindSpore's example: dev [8,4] map [1,0] shape [512,1024] -> dev [4,2,2,2].
  const auto e = TensorLayout({8, 4}, {1, 0}, {512, 1024}).ExpandDeviceArrangement({4, 2, 2, 2});
  REQUIRE(e);
  CHECK(*e == TensorLayout({4, 2, 2, 2}, {3, 2, 1, 0}, {4, 128, 2, 512}));
  CHECK(e->SliceShape() == Shape{1, 64, 1, 256});
  CHECK_FALSE(TensorLayout({8, 4}, {1, 0}, {512, 1024}).ExpandDeviceArrangement({4, 8}));
}

TEST_CASE("expanding the tensor shape places the split on the outer part") {
  const TensorLayout l({4}, {0, -1}, {512, 6});
  auto e = l.ExpandTensorShape({8, 64, 2, 3});
  REQUIRE(e.layout);
  CHECK(*e.layout == TensorLayout({4}, {0, -1, -1, -1}, {8, 64, 2, 3}));
  // A split of 4 over an outer dim of 2 needs the device dim factored into [2, 2] first.
  e = l.ExpandTensorShape({2, 256, 6});
  REQUIRE(e.needed_arrangement);
  CHECK(*e.needed_arrangement == Shape{2, 2});
  CHECK_FALSE(l.ExpandTensorShape({3, 2, 6}).layout);
}

TEST_CASE("common refinements are the union of prefix products") {
  CHECK(CommonRefinement({8, 4}, {2, 16}) == Shape{2, 4, 4});
  CHECK(CommonRefinement({512, 1024}, {1024, 512}) == Shape{512, 2, 512});
  CHECK_FALSE(CommonRefinement({2, 3}, {3, 2}));
  CHECK_FALSE(CommonRefinement({2, 3}, {7}));
  CHECK(CommonRefinement({}, {}) == Shape{});
}

}  // namespace
}  // namespace shardlab
