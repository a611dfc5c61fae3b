#include "core/layout/redistribution.h"

#include <random>

#include <catch2/catch.hpp>

#include "tests/layout/sharded_tensor.h"

namespace shardlab {
namespace {

std::vector<std::string> OpTypes(const Redistribution& r) {
  std::vector<std::string> types;
  for (const auto& op : r.ops) types.push_back(ToString(op.kind));
  return types;
}

// Executes the plan on every rank and checks each rank ends with its target slice.
void CheckPlanMovesData(const TensorLayout& from, const TensorLayout& to, bool alltoall) {
  const Redistribution r = PlanRedistribution(from, to, alltoall, 4);
  std::map<int64_t, testing::LocalTensor> tensors;
  for (int64_t rank = 0; rank < from.device_count(); ++rank) tensors[rank] = testing::SliceFor(from, rank);
  const auto result = testing::Execute(r.ops, tensors);
  for (int64_t rank = 0; rank < to.device_count(); ++rank) {
    const auto expected = testing::SliceFor(to, rank);
    INFO("rank " << rank);
    REQUIRE(result.at(rank).shape == expected.shape);
    REQUIRE(result.at(rank).values == expected.values);
  }
}

TEST_CASE("seed 003 example 1: row-split output into a whole-tensor input inserts AllGather") {
  // X×W with X split by rows on 4 devices, then a MatMul that wants its input whole.
  const TensorLayout out({4, 1, 1}, {2, -1}, {256, 128});
  const TensorLayout in({1, 1, 4}, {-1, -1}, {256, 128});
  const Redistribution r = PlanRedistribution(out, in, false, 4);
  CHECK(OpTypes(r) == std::vector<std::string>{"AllGather"});
  CHECK(r.comm_bytes_per_device == 3.0 * 64 * 128 * 4);
  CheckPlanMovesData(out, in, false);
}

TEST_CASE("seed 003 example 2: column split into row split is an AlltoAll") {
  const TensorLayout out({1, 1, 4}, {-1, 0}, {256, 128});  // columns over 4 devices
  const TensorLayout in({4, 1, 1}, {2, -1}, {256, 128});   // rows over 4 devices
  const Redistribution r = PlanRedistribution(out, in, true, 4);
  REQUIRE(r.primitives.size() == 1);
  CHECK(r.primitives[0].kind == RedistPrimitive::Kind::kPermuteByAxis);
  CHECK(OpTypes(r) == std::vector<std::string>{"AlltoAll"});
  CHECK(r.comm_bytes_per_device == Approx(256.0 * 32 * 3 / 4 * 4));
  // Without enable_alltoall MindSpore circumvents it with AllGather + Split + Concat + StridedSlice.
  CHECK(OpTypes(PlanRedistribution(out, in, false, 4)) ==
        std::vector<std::string>{"AllGather", "Split", "Concat", "StridedSlice"});
  CheckPlanMovesData(out, in, true);
  CheckPlanMovesData(out, in, false);
}

TEST_CASE("seed 003 example 3: equal layouts need no redistribution") {
  // MatMul ((2,1),(1,2)) output and MatMul ((2,2),(2,1)) first input on 4 devices.
  const TensorLayout out({2, 1, 2}, {2, 0}, {256, 128});
  const TensorLayout in({2, 2, 1}, {2, 1}, {256, 128});
  CHECK(PlanRedistribution(out, in, false, 4).empty());
}

TEST_CASE("MindSpore's redistribution unit tests") {
  auto r = PlanRedistribution(TensorLayout({2, 4, 2}, {2, 0}, {512, 1024}),
                              TensorLayout({4, 2, 2}, {2, 1}, {512, 1024}), false, 4);
  CHECK(OpTypes(r) ==
        std::vector<std::string>{"Reshape", "StridedSlice", "AllGather", "Split", "Concat", "StridedSlice", "Reshape"});
  r = PlanRedistribution(TensorLayout({16, 1, 1}, {2, 0}, {512, 1024}), TensorLayout({1, 16, 1}, {2, 1}, {512, 1024}),
                         false, 4);
  CHECK(OpTypes(r) == std::vector<std::string>{"AllGather", "StridedSlice"});
  r = PlanRedistribution(TensorLayout({8}, {0, -1, -1, -1}, {128, 64, 1, 1}), TensorLayout({8}, {0, -1}, {128, 64}),
                         false, 4);
  CHECK(OpTypes(r) == std::vector<std::string>{"Reshape"});
}

TEST_CASE("unification refines devices and shapes together") {
  const Redistribution r = PlanRedistribution(TensorLayout({8, 4}, {1, 0}, {512, 1024}),
                                              TensorLayout({2, 16}, {1, 0}, {512, 1024}), false, 2);
  CHECK(r.unified_from.device_arrangement() == Shape{2, 4, 4});
  CHECK(r.unified_from.tensor_shape() == r.unified_to.tensor_shape());
  CHECK_FALSE(r.through_replication);
  CheckPlanMovesData(r.from, r.to, false);
}

TEST_CASE("layouts whose factors do not nest go through replication") {
  const TensorLayout from({2, 3}, {1, 0}, {6, 6});
  const TensorLayout to({3, 2}, {1, 0}, {6, 6});
  const Redistribution r = PlanRedistribution(from, to, false, 4);
  CHECK(r.through_replication);
  CheckPlanMovesData(from, to, false);
}

TEST_CASE("redistribution rejects layouts of different tensors or device counts") {
  CHECK_THROWS_WITH(PlanRedistribution(TensorLayout({4}, {0}, {8}), TensorLayout({8}, {0}, {8}), false, 4),
                    Catch::Contains("over 4 and 8 devices"));
  CHECK_THROWS_WITH(PlanRedistribution(TensorLayout({4}, {0}, {8}), TensorLayout({4}, {0}, {12}), false, 4),
                    Catch::Contains("different element counts"));
}

// Random layouts of one tensor: shapes and device arrangements are random
// groupings of random factor sequences, maps random assignments.
struct RandomLayouts {
  std::mt19937_64 rng;

  std::vector<int64_t> Atoms(int count, bool mixed) {
    std::vector<int64_t> atoms;
    for (int i = 0; i < count; ++i) atoms.push_back(mixed && rng() % 4 == 0 ? 3 : 2);
    return atoms;
  }

  Shape Group(const std::vector<int64_t>& atoms) {
    Shape shape;
    for (size_t i = 0; i < atoms.size(); ++i) {
      if (shape.empty() || rng() % 2 == 0)
        shape.push_back(atoms[i]);
      else
        shape.back() *= atoms[i];
    }
    if (shape.empty()) shape.push_back(1);
    return shape;
  }

  TensorLayout Layout(const Shape& dev, const Shape& shape) {
    TensorMap map(shape.size(), kNotSplit);
    std::vector<size_t> dims(dev.size());
    for (size_t d = 0; d < dev.size(); ++d) dims[d] = d;
    std::shuffle(dims.begin(), dims.end(), rng);
    for (size_t d : dims) {
      if (rng() % 3 == 0) continue;  // leave some device dims unused: replication
      std::vector<size_t> candidates;
      for (size_t i = 0; i < shape.size(); ++i)
        if (map[i] == kNotSplit && shape[i] % dev[d] == 0) candidates.push_back(i);
      if (candidates.empty()) continue;
      map[candidates[rng() % candidates.size()]] = MapValueFromDim(static_cast<int>(d), dev.size());
    }
    return TensorLayout(dev, map, shape);
  }
};

TEST_CASE("property: every lowered plan moves every rank's data to its target slice") {
  RandomLayouts gen{std::mt19937_64(20261122)};
  int through_replication = 0, permutes = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const bool mixed = trial % 3 == 0;
    const auto device_atoms = gen.Atoms(1 + static_cast<int>(gen.rng() % 4), mixed);
    auto tensor_atoms = gen.Atoms(3 + static_cast<int>(gen.rng() % 5), mixed);
    tensor_atoms.insert(tensor_atoms.end(), device_atoms.begin(), device_atoms.end());
    std::shuffle(tensor_atoms.begin(), tensor_atoms.end(), gen.rng);
    auto other_atoms = tensor_atoms;
    if (trial % 5 == 0) std::shuffle(other_atoms.begin(), other_atoms.end(), gen.rng);  // a Reshape between
    auto other_devices = device_atoms;
    if (trial % 4 == 0) std::shuffle(other_devices.begin(), other_devices.end(), gen.rng);
    const TensorLayout from = gen.Layout(gen.Group(device_atoms), gen.Group(tensor_atoms));
    const TensorLayout to = gen.Layout(gen.Group(other_devices), gen.Group(other_atoms));
    INFO("trial " << trial << ": " << from.ToString() << " -> " << to.ToString());
    const bool alltoall = trial % 2 == 0;
    const Redistribution r = PlanRedistribution(from, to, alltoall, 4);
    through_replication += r.through_replication;
    for (const auto& p : r.primitives) permutes += p.kind == RedistPrimitive::Kind::kPermuteByAxis;
    CheckPlanMovesData(from, to, alltoall);
  }
  // The generator reaches both paths and AlltoAll-style moves.
  CHECK(through_replication > 0);
  CHECK(permutes > 0);
}

}  // namespace
}  // namespace shardlab
