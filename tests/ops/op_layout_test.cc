#include "core/ops/op_layout.h"

#include <catch2/catch.hpp>

#include "core/layout/device_matrix.h"

namespace shardlab {
namespace {

// An operator with its shapes, for rule tests without a graph.
struct Case {
  Operator op;
  std::vector<TensorType> inputs;
  std::vector<TensorType> outputs;

  Case(const std::string& type, std::vector<Shape> shapes, Attrs attrs = {}) {
    op.name = type;
    op.type = type;
    op.attrs = std::move(attrs);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const bool indices =
          ((type == "Gather" || type == "CrossEntropyLoss" || type == "MoeDispatch" || type == "MoeCombine") &&
           i == 1) ||
          type == "OneHot";
      inputs.push_back({shapes[i], indices ? DType::kInt32 : DType::kFloat32});
    }
    outputs = InferOutputs(op, inputs);
  }

  OpLayout Layout(const Strategy& s, int64_t devices) const {
    return InferOpLayout(op, inputs, outputs, s, devices, DefaultWeights(op, inputs, outputs));
  }
};

TEST_CASE("seed 004: MatMul [[2,1],[1,4]] on 8 devices") {
  const Case mm("MatMul", {{128, 64}, {64, 32}});
  const OpLayout l = mm.Layout({{2, 1}, {1, 4}}, 8);
  CHECK(l.device_matrix == Shape{2, 1, 4});
  CHECK(l.inputs[0].tensor_map() == TensorMap{2, 1});
  CHECK(l.inputs[1].tensor_map() == TensorMap{1, 0});
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 0});
  CHECK(l.forward_comm.empty());
  // Devices 0-3 hold one row slice of X, 4-7 the other.
  const DeviceMatrix m(l.device_matrix);
  for (int64_t r = 0; r < 8; ++r) CHECK(m.Coordinates(r)[l.inputs[0].SplitDim(0)] == (r < 4 ? 0 : 1));
  // Devices 0 and 4 hold the same column slice of W.
  const auto same_w = m.GroupByTensorMap(0, l.inputs[1].tensor_map());
  CHECK(same_w == std::vector<int64_t>{0, 4});
  REQUIRE(l.mirror_comm.size() == 1);
  CHECK(l.mirror_comm[0].input == 1);
  CHECK(l.GroupOf(l.mirror_comm[0], 0) == std::vector<int64_t>{0, 4});
  CHECK(l.work.forward_flops == 2.0 * 64 * 64 * 8);
}

TEST_CASE("gradients of inputs that are whole along an output split are summed in backward") {
  // Column-parallel MatMul: X is whole across the 4 column slices, so dX is a partial sum.
  const Case column("MatMul", {{64, 128}, {128, 256}});
  OpLayout l = column.Layout({{2, 1}, {1, 4}}, 8);
  REQUIRE(l.backward_comm.size() == 1);
  CHECK(l.backward_comm[0].input == 0);
  CHECK(l.GroupOf(l.backward_comm[0], 0) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(l.backward_comm[0].bytes == 32.0 * 128 * 4);
  // Row-parallel MatMul: X is split on k like W, nothing is partial in backward.
  const Case row("MatMul", {{64, 128}, {128, 256}});
  CHECK(row.Layout({{2, 4}, {4, 1}}, 8).backward_comm.empty());
  // Repetition is not a partial sum.
  CHECK(column.Layout({{2, 1}, {1, 1}}, 8).backward_comm.empty());
}

TEST_CASE("MatMul with a split reduction dimension inserts an AllReduce (seed 003 example 3)") {
  const Case mm("MatMul", {{256, 128}, {128, 64}});
  const OpLayout l = mm.Layout({{2, 2}, {2, 1}}, 4);
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].type == Collective::kAllReduce);
  CHECK(l.forward_comm[0].reduce == ReduceOp::kSum);
  CHECK(l.GroupOf(l.forward_comm[0], 0) == std::vector<int64_t>{0, 1});
  CHECK(l.forward_comm[0].bytes == 128.0 * 64 * 4);
}

TEST_CASE("forward_reduce_scatter scatters the partial products over the rows") {
  const Case mm("MatMul", {{256, 128}, {128, 64}}, {{"forward_reduce_scatter", true}});
  const OpLayout l = mm.Layout({{2, 2}, {2, 2}}, 8);
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].type == Collective::kReduceScatter);
  CHECK(l.forward_comm[0].bytes == 128.0 * 32 * 4);  // the whole partial [128, 32] slice goes in
  CHECK(l.outputs[0] == TensorLayout({4, 2}, {1, 0}, {256, 64}));
  CHECK(l.outputs[0].SliceShape() == Shape{64, 32});
  // Each device multiplies its [128, 64] rows by its [64, 32] block before the scatter.
  CHECK(l.work.forward_flops == 2.0 * 128 * 32 * 64);
  const OpLayout repeated = mm.Layout({{2, 2}, {2, 1}}, 16);
  CHECK(repeated.outputs[0] == TensorLayout({4, 1, 4}, {2, 1}, {256, 64}));
}

TEST_CASE("MindSpore's 4-D BatchMatMul maps") {
  const Case bmm("BatchMatMul", {{128, 128, 128, 128}, {128, 128, 128, 64}});
  const OpLayout l = bmm.Layout({{2, 4, 8, 16}, {2, 4, 16, 1}}, 1024);
  CHECK(l.device_matrix == Shape{2, 4, 8, 16, 1});
  CHECK(l.inputs[0].tensor_map() == TensorMap{4, 3, 2, 1});
  CHECK(l.inputs[1].tensor_map() == TensorMap{4, 3, 1, 0});
  CHECK(l.outputs[0].tensor_map() == TensorMap{4, 3, 2, 0});
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].group_size == 16);
}

TEST_CASE("MatMul on a 3-D input treats the leading dimensions as batch (MindSpore's MatMulInfo)") {
  // A [b, s, k] x B [k, n] with strategies (b1, s1, k1), (k1, n1): device matrix [b1, s1, k1, n1].
  const Case mm("MatMul", {{8, 64, 128}, {128, 256}});
  const OpLayout l = mm.Layout({{2, 2, 2}, {2, 1}}, 8);
  CHECK(l.device_matrix == Shape{2, 2, 2, 1});
  CHECK(l.inputs[0].tensor_map() == TensorMap{3, 2, 1});
  CHECK(l.inputs[1].tensor_map() == TensorMap{1, 0});
  CHECK(l.outputs[0].tensor_map() == TensorMap{3, 2, 0});
  CHECK(l.outputs[0].SliceShape() == Shape{4, 32, 256});
  // k is split: an AllReduce(sum) over the k dimension (device-matrix index 2 from the left).
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].type == Collective::kAllReduce);
  CHECK(l.GroupOf(l.forward_comm[0], 0) == std::vector<int64_t>{0, 1});
  CHECK(l.forward_comm[0].bytes == 4.0 * 32 * 256 * 4);
  CHECK(l.work.forward_flops == 2.0 * 4 * 32 * 64 * 256);
  // The reduction dimension must be split alike, as MindSpore checks.
  CHECK_THROWS_WITH(mm.Layout({{2, 2, 2}, {1, 2}}, 8), Catch::Contains("reduction dimension is split 2 ways"));
}

TEST_CASE("BatchMatMul batch dimensions: equal splits, right-aligned, size-1 dimensions broadcast") {
  // Both 3-D: A [b, m, k] (b1, m1, k1) x B [b, k, n] (b1, k1, n1): device matrix [b1, m1, k1, n1].
  const Case both("BatchMatMul", {{8, 64, 32}, {8, 32, 16}});
  const OpLayout l = both.Layout({{2, 2, 1}, {2, 1, 2}}, 8);
  CHECK(l.device_matrix == Shape{2, 2, 1, 2});
  CHECK(l.inputs[0].tensor_map() == TensorMap{3, 2, 1});
  CHECK(l.inputs[1].tensor_map() == TensorMap{3, 1, 0});
  CHECK(l.outputs[0].tensor_map() == TensorMap{3, 2, 0});
  CHECK(l.forward_comm.empty());
  CHECK_THROWS_WITH(both.Layout({{2, 2, 1}, {4, 1, 1}}, 8),
                    Catch::Contains("batch dimension 0 is split 2 ways in the first input but 4 in the second"));
  // A 4-D input against a 3-D one lines up on the right: B's batch dim is A's second.
  const Case ranks("BatchMatMul", {{4, 8, 64, 32}, {8, 32, 16}});
  const OpLayout r = ranks.Layout({{2, 2, 1, 1}, {2, 1, 1}}, 4);
  CHECK(r.device_matrix == Shape{2, 2, 1, 1, 1});
  CHECK(r.inputs[1].tensor_map() == TensorMap{3, 1, 0});
  CHECK(r.outputs[0].tensor_map() == TensorMap{4, 3, 2, 0});
  // A size-1 batch dimension broadcasts: it stays whole (no map) and takes the other input's split.
  const Case broadcast("BatchMatMul", {{1, 64, 32}, {8, 32, 16}});
  const OpLayout b = broadcast.Layout({{1, 2, 1}, {4, 1, 1}}, 8);
  CHECK(b.device_matrix == Shape{4, 2, 1, 1});
  CHECK(b.inputs[0].tensor_map() == TensorMap{kNotSplit, 2, 1});
  CHECK(b.inputs[1].tensor_map() == TensorMap{3, 1, 0});
  CHECK(b.outputs[0].SliceShape() == Shape{2, 32, 16});
  CHECK_THROWS_WITH(broadcast.Layout({{2, 2, 1}, {2, 1, 1}}, 8),
                    Catch::Contains("shape [1, 64, 32] of input 0 cannot be divisible by strategy value 2"));
}

TEST_CASE("transpose_a takes m from A's last dimension and k from its second-to-last") {
  // A [k, m] (k1, m1): device matrix [m1, k1, n1], A's map [1, 2].
  const Case mm("MatMul", {{128, 64}, {128, 32}}, {{"transpose_a", true}});
  const OpLayout l = mm.Layout({{2, 4}, {2, 1}}, 8);
  CHECK(l.device_matrix == Shape{4, 2, 1});
  CHECK(l.inputs[0].tensor_map() == TensorMap{1, 2});
  CHECK(l.inputs[0].SliceShape() == Shape{64, 16});
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 0});
  CHECK(l.outputs[0].SliceShape() == Shape{16, 32});
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.GroupOf(l.forward_comm[0], 0) == std::vector<int64_t>{0, 1});
  // Transposes act on the last two dimensions only.
  const Case bmm("BatchMatMul", {{4, 128, 64}, {4, 32, 128}}, {{"transpose_a", true}, {"transpose_b", true}});
  const OpLayout t = bmm.Layout({{2, 1, 2}, {2, 2, 1}}, 8);
  CHECK(t.device_matrix == Shape{2, 2, 1, 2});
  CHECK(t.inputs[0].tensor_map() == TensorMap{3, 1, 2});
  CHECK(t.inputs[1].tensor_map() == TensorMap{3, 0, 1});
  CHECK(t.outputs[0].SliceShape() == Shape{2, 32, 16});
}

TEST_CASE("transpose_b swaps the weight's map") {
  const Case mm("MatMul", {{32, 64}, {128, 64}}, {{"transpose_b", true}});
  const OpLayout l = mm.Layout({{2, 1}, {4, 1}}, 8);
  CHECK(l.device_matrix == Shape{2, 1, 4});
  CHECK(l.inputs[1].tensor_map() == TensorMap{0, 1});
  CHECK(l.inputs[1].SliceShape() == Shape{32, 64});
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 0});
}

TEST_CASE("repeated calculation is appended as the last device-matrix dimension") {
  const Case mm("MatMul", {{64, 64}, {64, 64}});
  const OpLayout l = mm.Layout({{2, 2}, {2, 1}}, 8);
  CHECK(l.repeat == 2);
  CHECK(l.device_matrix == Shape{2, 2, 1, 2});
  CHECK(l.inputs[0].tensor_map() == TensorMap{3, 2});
  CHECK(l.inputs[1].tensor_map() == TensorMap{2, 1});
  CHECK(l.outputs[0].tensor_map() == TensorMap{3, 1});
  const Case t("Transpose", {{64, 64}}, {{"perm", std::vector<int64_t>{1, 0}}});
  const OpLayout tl = t.Layout({{4, 1}}, 32);
  CHECK(tl.device_matrix == Shape{4, 1, 8});
  CHECK(tl.inputs[0].tensor_map() == TensorMap{2, 1});
  CHECK(tl.outputs[0].tensor_map() == TensorMap{1, 2});
}

TEST_CASE("strategy rules give MindSpore's errors") {
  const Case mm("MatMul", {{128, 64}, {64, 32}});
  CHECK_THROWS_WITH(mm.Layout({{2, 1}}, 8), Catch::Contains("strategy size 1 is not equal to inputs size 2"));
  CHECK_THROWS_WITH(mm.Layout({{2, 1, 1}, {1, 4}}, 8), Catch::Contains("has 3 entries but the input has 2"));
  CHECK_THROWS_WITH(mm.Layout({{0, 1}, {1, 4}}, 8), Catch::Contains("entry < 1"));
  CHECK_THROWS_WITH(mm.Layout({{3, 1}, {1, 1}}, 8), Catch::Contains("not a power of two"));
  CHECK_THROWS_WITH(Case("MatMul", {{96, 64}, {64, 32}}).Layout({{4, 1}, {1, 1}}, 6), Catch::Contains("requires 4"));
  CHECK_NOTHROW(Case("MatMul", {{96, 64}, {64, 32}}).Layout({{3, 1}, {1, 2}}, 6));
  CHECK_THROWS_WITH(Case("MatMul", {{100, 64}, {64, 32}}).Layout({{8, 1}, {1, 1}}, 8),
                    Catch::Contains("cannot be divisible by strategy value 8"));
  CHECK_THROWS_WITH(mm.Layout({{4, 1}, {1, 4}}, 8),
                    Catch::Contains("it requires 16 devices, but the device number of this stage is 8"));
  CHECK_THROWS_WITH(mm.Layout({{2, 2}, {1, 4}}, 8), Catch::Contains("reduction dimension is split 2 ways"));
}

TEST_CASE("element-wise broadcasting follows MindSpore's example") {
  const Case add("Add", {{1, 48}, {48, 1}});
  const OpLayout l = add.Layout({{1, 8}, {4, 1}}, 32);
  CHECK(l.device_matrix == Shape{4, 8});
  CHECK(l.inputs[0].tensor_map() == TensorMap{-1, 0});
  CHECK(l.inputs[1].tensor_map() == TensorMap{1, -1});
  CHECK(l.outputs[0].tensor_map() == TensorMap{1, 0});
  CHECK_THROWS_WITH(Case("Mul", {{16, 32}, {16, 32}}).Layout({{8, 1}, {1, 8}}, 8),
                    Catch::Contains("split differently"));
}

TEST_CASE("reductions communicate only when a reduced dimension is split") {
  const Case sum("ReduceSum", {{16, 32, 64}}, {{"axis", std::vector<int64_t>{-1}}, {"keep_dims", false}});
  OpLayout l = sum.Layout({{4, 8, 1}}, 32);
  CHECK(l.device_matrix == Shape{4, 8, 1});
  CHECK(l.inputs[0].tensor_map() == TensorMap{2, 1, 0});
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 1});
  CHECK(l.forward_comm.empty());
  l = sum.Layout({{4, 4, 2}}, 32);
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].group_size == 2);
  l = sum.Layout({{4, 4, 1}}, 32);
  CHECK(l.device_matrix == Shape{4, 4, 1, 2});
  const Case max("ReduceMax", {{16, 32}}, {{"axis", std::vector<int64_t>{0}}, {"keep_dims", true}});
  l = max.Layout({{4, 2}}, 8);
  CHECK(l.outputs[0].tensor_map() == TensorMap{-1, 0});
  CHECK(l.forward_comm[0].reduce == ReduceOp::kMax);
}

TEST_CASE("softmax, layer norm and cross-entropy keep their normalised dimensions whole") {
  CHECK_THROWS_WITH(Case("Softmax", {{8, 16}}, {{"axis", std::vector<int64_t>{-1}}}).Layout({{2, 4}}, 8),
                    Catch::Contains("cannot split its axis dimension 1"));
  const Case ln("LayerNorm", {{32, 64}, {64}, {64}},
                {{"begin_norm_axis", int64_t{-1}}, {"begin_params_axis", int64_t{-1}}});
  const OpLayout l = ln.Layout({{8, 1}, {1}, {1}}, 8);
  CHECK(l.inputs[1].tensor_map() == TensorMap{0});
  CHECK(l.inputs[1].ReplicaCount() == 8);
  CHECK_THROWS_WITH(ln.Layout({{4, 2}, {2}, {2}}, 8), Catch::Contains("normalised dimension 1"));
  const Case ce("SoftmaxCrossEntropyWithLogits", {{32, 10}, {32, 10}});
  CHECK(ce.Layout({{8, 1}, {8, 1}}, 8).outputs[0].tensor_map() == TensorMap{1});
  CHECK_THROWS_WITH(ce.Layout({{8, 1}, {4, 1}}, 8), Catch::Contains("same strategy"));
}

TEST_CASE("Gather splits the table by rows with an AllReduce, or by columns without") {
  const Case g("Gather", {{64, 16}, {4, 7}}, {{"axis", int64_t{0}}});
  // Rows split: MindSpore's device matrix is the indices' strategy, then the table's reversed (rows innermost).
  OpLayout l = g.Layout({{8, 1}, {1, 1}}, 8);
  CHECK(l.device_matrix == Shape{1, 1, 1, 8});
  CHECK(l.inputs[0].tensor_map() == TensorMap{0, 1});
  CHECK(l.inputs[1].tensor_map() == TensorMap{3, 2});
  CHECK(l.outputs[0].tensor_map() == TensorMap{3, 2, 1});
  CHECK(l.outputs[0].Normalized().tensor_map() == TensorMap{-1, -1, -1});
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].group_size == 8);
  // MindFormers' model-parallel vocabulary: rows over 4 (consecutive ranks), indices over 2.
  l = g.Layout({{4, 1}, {2, 1}}, 8);
  CHECK(l.device_matrix == Shape{2, 1, 1, 4});
  CHECK(l.outputs[0].Normalized() == TensorLayout({2, 4}, {1, -1, -1}, {4, 7, 16}));
  CHECK(l.GroupOf(l.forward_comm[0], 0) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(l.GroupOf(l.forward_comm[0], 5) == std::vector<int64_t>{4, 5, 6, 7});
  CHECK_THROWS_WITH(g.Layout({{4, 1}, {1, 1}}, 8), Catch::Contains("must use all of them"));
  l = g.Layout({{1, 2}, {4, 1}}, 8);
  CHECK(l.device_matrix == Shape{1, 2, 4, 1});
  CHECK(l.inputs[0].tensor_map() == TensorMap{3, 2});
  CHECK(l.inputs[1].tensor_map() == TensorMap{1, 0});
  CHECK(l.outputs[0].tensor_map() == TensorMap{1, 0, 2});
  CHECK(l.forward_comm.empty());
}

TEST_CASE("Reshape carries splits that keep whole slices") {
  // MindSpore's test: [32,512,7,7] -> [32,25088] with (4,1,1,1) on 32 devices.
  const Case r("Reshape", {{32, 512, 7, 7}}, {{"shape", std::vector<int64_t>{32, 25088}}});
  OpLayout l = r.Layout({{4, 1, 1, 1}}, 32);
  CHECK(l.device_matrix == Shape{4, 1, 1, 1, 8});
  CHECK(l.inputs[0].Normalized() == TensorLayout({4, 8}, {1, -1, -1, -1}, {32, 512, 7, 7}));
  CHECK(l.outputs[0].Normalized() == TensorLayout({4, 8}, {1, -1}, {32, 25088}));
  // Heads split over model parallel survive [T, H] -> [B, S, heads, head_dim].
  const Case heads("Reshape", {{64, 256}}, {{"shape", std::vector<int64_t>{4, 16, 8, 32}}});
  l = heads.Layout({{2, 4}}, 8);
  CHECK(l.outputs[0].tensor_map() == TensorMap{1, -1, 0, -1});
  CHECK(l.forward_comm.empty());
  // A split of an inner dimension merged into an outer one must be gathered.
  const Case merge("Reshape", {{4, 8}}, {{"shape", std::vector<int64_t>{32}}});
  l = merge.Layout({{1, 4}}, 4);
  CHECK(l.outputs[0].tensor_map() == TensorMap{-1});
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].type == Collective::kAllGather);
}

TEST_CASE("convolution, pooling, batch norm and one-hot rules") {
  const Case conv("Conv2D", {{32, 64, 56, 56}, {128, 64, 3, 3}}, {{"stride", int64_t{1}}, {"pad", int64_t{1}}});
  OpLayout l = conv.Layout({{2, 2, 1, 1}, {2, 2, 1, 1}}, 8);
  CHECK(l.device_matrix == Shape{2, 2, 2});
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 0, -1, -1});
  CHECK(l.forward_comm.size() == 1);
  CHECK_THROWS_WITH(conv.Layout({{2, 1, 2, 1}, {2, 1, 1, 1}}, 8), Catch::Contains("spatial"));
  const Case bn("BatchNorm", {{32, 64, 7, 7}, {64}, {64}, {64}, {64}});
  l = bn.Layout({{4, 2, 1, 1}, {2}, {2}, {2}, {2}}, 8);
  CHECK(l.inputs[1].tensor_map() == TensorMap{2});
  CHECK_THROWS_WITH(bn.Layout({{4, 2, 1, 1}, {1}, {2}, {2}, {2}}, 8), Catch::Contains("per-channel"));
  const Case onehot("OneHot", {{32}}, {{"depth", int64_t{10}}});
  l = onehot.Layout({{8, 1}}, 8);
  CHECK(l.inputs[0].tensor_map() == TensorMap{1});
  CHECK(l.outputs[0].tensor_map() == TensorMap{1, 0});
  const Case pool("MaxPool", {{32, 64, 56, 56}},
                  {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"pad", int64_t{1}}});
  CHECK(pool.Layout({{8, 1, 1, 1}}, 8).outputs[0].SliceShape() == Shape{4, 64, 28, 28});
}

TEST_CASE("strategy enumeration lists every valid strategy") {
  const Case mm("MatMul", {{128, 64}, {64, 32}});
  const auto full = EnumerateStrategies(mm.op, mm.inputs, mm.outputs, 8, true);
  CHECK(full.size() == 10);  // (m, k, n) powers of two with m*k*n = 8
  const auto any = EnumerateStrategies(mm.op, mm.inputs, mm.outputs, 8, false);
  CHECK(any.size() == 20);  // m*k*n dividing 8
  for (const auto& s : any) CHECK_NOTHROW(mm.Layout(s, 8));
  const Case softmax("Softmax", {{8, 16}}, {{"axis", std::vector<int64_t>{-1}}});
  for (const auto& s : EnumerateStrategies(softmax.op, softmax.inputs, softmax.outputs, 4, false)) CHECK(s[0][1] == 1);
}

TEST_CASE("the data-parallel default splits the batch and keeps weights whole") {
  const Case mm("MatMul", {{128, 64}, {64, 32}});
  CHECK(DataParallelStrategy(mm.op, mm.inputs, mm.outputs, 8, {1}) == Strategy{{8, 1}, {1, 1}});
  const Case sm("Softmax", {{8}}, {{"axis", std::vector<int64_t>{-1}}});
  CHECK(DataParallelStrategy(sm.op, sm.inputs, sm.outputs, 8, {}) == Strategy{{1}});
  const Case small("MatMul", {{4, 64}, {64, 32}});
  CHECK(DataParallelStrategy(small.op, small.inputs, small.outputs, 8, {1}) == Strategy{{4, 1}, {1, 1}});
}

TEST_CASE("FlashAttentionScore splits batch and heads alike and keeps grouped key/value heads with their queries") {
  // 8 query heads over 2 key/value heads (GQA), BNSD.
  const Case fa("FlashAttentionScore", {{4, 8, 128, 64}, {4, 2, 128, 64}, {4, 2, 128, 64}},
                {{"sparse_mode", int64_t{2}}});
  const OpLayout l = fa.Layout({{2, 2, 1, 1}, {2, 2, 1, 1}, {2, 2, 1, 1}}, 4);
  CHECK(l.forward_comm.empty());
  CHECK(l.inputs[1].SliceShape() == Shape{2, 1, 128, 64});
  CHECK(l.outputs[0].SliceShape() == Shape{2, 4, 128, 64});
  // Causal: Q·Kᵀ and P·V over half the pairs; backward five products to forward's two.
  CHECK(l.work.forward_flops == 4.0 * 2 * 4 * 128 * 128 * 64 * 0.5);
  CHECK(l.work.backward_flops == 2.5 * l.work.forward_flops);
  // Key/value heads split 4 ways do not divide 2 heads; head_dim and the key sequence stay whole.
  CHECK_THROWS_AS(fa.Layout({{1, 4, 1, 1}, {1, 4, 1, 1}, {1, 4, 1, 1}}, 4), LayoutError);
  CHECK_THROWS_AS(fa.Layout({{1, 1, 1, 2}, {1, 1, 1, 2}, {1, 1, 1, 2}}, 2), LayoutError);
  CHECK_THROWS_AS(fa.Layout({{1, 1, 1, 1}, {1, 1, 2, 1}, {1, 1, 2, 1}}, 2), LayoutError);
  // A query-sequence split attends to the whole key and value, whose gradients are summed over it.
  const OpLayout rows = fa.Layout({{1, 1, 2, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}}, 2);
  CHECK(rows.backward_comm.size() == 2);
}

TEST_CASE("FlashAttentionScore in BSND splits the sequence outside the heads") {
  // [batch, seq, heads, head_dim]: batch 2 ways, the query sequence 2 ways (context parallel), heads 2 ways.
  const Case fa("FlashAttentionScore", {{4, 128, 8, 64}, {4, 128, 2, 64}, {4, 128, 2, 64}},
                {{"sparse_mode", int64_t{2}}, {"input_layout", std::string("BSND")}, {"head_num", int64_t{8}}});
  CHECK(fa.outputs[0].shape == Shape{4, 128, 8, 64});
  const OpLayout l = fa.Layout({{2, 2, 2, 1}, {2, 1, 2, 1}, {2, 1, 2, 1}}, 8);
  CHECK(l.device_matrix == Shape{2, 2, 2, 1});
  CHECK(l.inputs[0].SliceShape() == Shape{2, 64, 4, 64});
  CHECK(l.inputs[1].SliceShape() == Shape{2, 128, 1, 64});
  // The devices that share a query chunk's keys: those 2 apart (the sequence split).
  const DeviceMatrix m(l.device_matrix);
  CHECK(m.GroupByTensorMap(0, l.inputs[1].tensor_map()) == std::vector<int64_t>{0, 2});
  // Each device's query rows against every key, half of them masked.
  CHECK(l.work.forward_flops == 4.0 * 2 * 4 * 64 * 128 * 64 * 0.5);
  CHECK_THROWS_AS(fa.Layout({{1, 2, 1, 1}, {1, 2, 1, 1}, {1, 2, 1, 1}}, 2), LayoutError);
  CHECK_THROWS_WITH(Case("FlashAttentionScore", {{4, 128, 8, 64}, {4, 128, 2, 64}, {4, 128, 2, 64}},
                         {{"input_layout", std::string("SBH")}}),
                    Catch::Contains("BNSD or BSND"));
}

TEST_CASE("Reshape splits a device dimension over batch and sequence and merges it back") {
  // [tokens, width] with the tokens split 8 ways (data parallel 4 x context parallel 2) and the
  // width 2 ways -> [batch 4, seq 16, heads 4, head_dim 8]: each slice is one sequence's half.
  const Case split("Reshape", {{64, 32}}, {{"shape", std::vector<int64_t>{4, 16, 4, 8}}});
  OpLayout l = split.Layout({{8, 2}}, 16);
  CHECK(l.forward_comm.empty());
  CHECK(l.outputs[0].device_arrangement() == Shape{4, 2, 2});
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 1, 0, -1});
  CHECK(l.outputs[0].SliceShape() == Shape{1, 8, 2, 8});
  // Device 6 holds tokens 24..31 (sample 1, positions 8..15) on both layouts.
  const DeviceMatrix in(l.inputs[0].device_arrangement()), out(l.outputs[0].device_arrangement());
  CHECK(in.Coordinates(6)[0] == 3);
  CHECK(out.Coordinates(6) == std::vector<int64_t>{1, 1, 0});
  // Back: batch split whole and the sequence split merge into the tokens' split.
  const Case merge("Reshape", {{4, 16, 4, 8}}, {{"shape", std::vector<int64_t>{64, 32}}});
  l = merge.Layout({{4, 2, 2, 1}}, 16);
  CHECK(l.forward_comm.empty());
  CHECK(l.outputs[0].device_arrangement() == Shape{8, 2, 1});
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 1});
  // Two samples per batch slice are not one block of tokens: gathered.
  const Case strided("Reshape", {{8, 16, 4, 8}}, {{"shape", std::vector<int64_t>{128, 32}}});
  l = strided.Layout({{4, 2, 2, 1}}, 16);
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].type == Collective::kAllGather);
}

TEST_CASE("Reshape merges a whole split and the split after it into one dimension with the rest") {
  // Ulysses' heads after the exchange: [batch, seq, ulysses 2, mp 4, heads 3, head_dim 8], the
  // two group axes split whole -> [batch, seq, 24 heads, head_dim]: each device 3 consecutive heads.
  const Case heads("Reshape", {{2, 16, 2, 4, 3, 8}}, {{"shape", std::vector<int64_t>{2, 16, 24, 8}}});
  const OpLayout l = heads.Layout({{1, 1, 2, 4, 1, 1}}, 8);
  CHECK(l.forward_comm.empty());
  CHECK(l.outputs[0].device_arrangement() == Shape{1, 1, 8, 1, 1});
  CHECK(l.outputs[0].tensor_map() == TensorMap{-1, -1, 2, -1});
  CHECK(l.outputs[0].SliceShape() == Shape{2, 16, 3, 8});
  // The rest split too: not one block of heads, gathered.
  const OpLayout split_rest = heads.Layout({{1, 1, 2, 2, 3, 1}}, 12);
  REQUIRE(split_rest.forward_comm.size() == 1);
  CHECK(split_rest.forward_comm[0].type == Collective::kAllGather);
}

TEST_CASE("CrossEntropyLoss splits the vocabulary and AllReduces its per-row partials") {
  const Case ce("CrossEntropyLoss", {{64, 1000}, {64}});
  const OpLayout l = ce.Layout({{2, 4}, {2}}, 8);
  REQUIRE(l.forward_comm.size() == 1);
  CHECK(l.forward_comm[0].type == Collective::kAllReduce);
  CHECK(l.forward_comm[0].group_size == 4);
  CHECK(l.forward_comm[0].bytes == 32.0 * 4);  // the [rows] fp32 loss slice
  CHECK(ce.Layout({{8, 1}, {8}}, 8).forward_comm.empty());
  CHECK_THROWS_AS(ce.Layout({{2, 4}, {4}}, 8), LayoutError);
  // The one-hot primitive keeps MindSpore's rule: classes whole.
  const Case onehot("SoftmaxCrossEntropyWithLogits", {{64, 1000}, {64, 1000}});
  CHECK_THROWS_AS(onehot.Layout({{2, 4}, {2, 4}}, 8), LayoutError);
}

TEST_CASE("RmsNorm RotaryPositionEmbedding and SplitV keep their last dimension whole") {
  const Case rms("RmsNorm", {{64, 512}, {512}});
  CHECK(rms.Layout({{8, 1}, {1}}, 8).mirror_comm.size() == 1);  // gamma's gradient over the row split
  CHECK_THROWS_AS(rms.Layout({{1, 8}, {8}}, 8), LayoutError);
  const Case rope("RotaryPositionEmbedding", {{4, 128, 8, 64}});
  CHECK(rope.Layout({{2, 1, 4, 1}}, 8).forward_comm.empty());
  CHECK_THROWS_AS(rope.Layout({{1, 1, 1, 2}}, 2), LayoutError);
  const Case split("SplitV", {{64, 8, 96}},
                   {{"split_dim", int64_t{2}}, {"size_splits", std::vector<int64_t>{64, 16, 16}}});
  REQUIRE(split.outputs.size() == 3);
  CHECK(split.outputs[1].shape == Shape{64, 8, 16});
  const OpLayout parts = split.Layout({{2, 4, 1}}, 8);
  CHECK(parts.outputs[2].SliceShape() == Shape{32, 2, 16});
  CHECK_THROWS_AS(split.Layout({{1, 1, 2}}, 2), LayoutError);
}

TEST_CASE("MoeDispatch and MoeCombine split groups and hidden only and keep the routing with its groups") {
  const Case dispatch("MoeDispatch", {{8, 16, 32}, {8, 16, 2}}, {{"expert_num", int64_t{4}}, {"capacity", int64_t{8}}});
  REQUIRE(dispatch.outputs[0].shape == Shape{8, 4, 8, 32});
  const OpLayout l = dispatch.Layout({{4, 1, 2}, {4, 1, 1}}, 8);
  CHECK(l.device_matrix == Shape{4, 2});
  CHECK(l.inputs[0].tensor_map() == TensorMap{1, -1, 0});
  CHECK(l.inputs[1].tensor_map() == TensorMap{1, -1, -1});
  CHECK(l.outputs[0].tensor_map() == TensorMap{1, -1, -1, 0});
  CHECK(l.forward_comm.empty());
  CHECK_THROWS_WITH(dispatch.Layout({{4, 2, 1}, {4, 2, 1}}, 8), Catch::Contains("not dimension 1"));
  CHECK_THROWS_WITH(dispatch.Layout({{4, 1, 1}, {2, 1, 1}}, 8), Catch::Contains("like its first input"));
  const Case combine("MoeCombine", {{8, 4, 8, 32}, {8, 16, 2}, {8, 16, 2}});
  REQUIRE(combine.outputs[0].shape == Shape{8, 16, 32});
  const OpLayout c = combine.Layout({{8, 1, 1, 1}, {8, 1, 1}, {8, 1, 1}}, 8);
  CHECK(c.outputs[0].tensor_map() == TensorMap{1, -1, 0});
}

TEST_CASE("Concat keeps its axis whole and BroadcastTo its repeated dimensions") {
  const Case concat("Concat", {{4, 8, 16}, {4, 8, 4}}, {{"axis", int64_t{2}}});
  REQUIRE(concat.outputs[0].shape == Shape{4, 8, 20});
  const OpLayout l = concat.Layout({{2, 4, 1}, {2, 4, 1}}, 8);
  CHECK(l.outputs[0].tensor_map() == TensorMap{2, 1, 0});
  CHECK_THROWS_WITH(concat.Layout({{2, 1, 4}, {2, 1, 4}}, 8), Catch::Contains("cannot split its axis"));
  CHECK_THROWS_WITH(concat.Layout({{2, 4, 1}, {4, 2, 1}}, 8), Catch::Contains("like input 0"));
  const Case broadcast("BroadcastTo", {{4, 1, 16}}, {{"shape", std::vector<int64_t>{4, 8, 16}}});
  const OpLayout b = broadcast.Layout({{4, 1, 2}}, 8);
  CHECK(b.inputs[0].tensor_map() == TensorMap{2, 1, 0});
  CHECK(b.outputs[0].tensor_map() == TensorMap{2, -1, 0});
}

}  // namespace
}  // namespace shardlab
