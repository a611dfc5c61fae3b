#include "core/graph/graph.h"

#include "core/graph/graph_builder.h"
#include "core/graph/op_types.h"
#include "core/graph/shape_inference.h"
#include "core/ops/flops.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

TEST_CASE("the graph builder infers MindSpore shapes") {
  GraphBuilder b("g");
  const int x = b.Input("x", {32, 64}, DType::kFloat16);
  const int w = b.Parameter("w", {128, 64}, DType::kFloat16);
  const int y = b.MatMul("mm", x, w, false, true);
  CHECK(b.shape(y) == Shape{32, 128});
  const int q = b.Input("q", {2, 4, 16, 8}, DType::kFloat16);
  const int k = b.Input("k", {2, 4, 8, 16}, DType::kFloat16);
  CHECK(b.shape(b.BatchMatMul("scores", q, k, false, false)) == Shape{2, 4, 16, 16});
  const int broadcast =
      b.Binary("Add", "add", b.Input("a", {1, 48}, DType::kFloat32), b.Input("c", {48, 1}, DType::kFloat32));
  CHECK(b.shape(broadcast) == Shape{48, 48});
  CHECK(b.shape(b.Transpose("t", q, {0, 2, 1, 3})) == Shape{2, 16, 4, 8});
  CHECK(b.shape(b.Reduce("ReduceSum", "sum", q, {-1}, true)) == Shape{2, 4, 16, 1});
  CHECK(b.shape(b.Reduce("ReduceMean", "mean", q, {1, 2}, false)) == Shape{2, 8});
  const int table = b.Parameter("table", {1000, 16}, DType::kFloat16);
  const int ids = b.Input("ids", {4, 7}, DType::kInt32);
  CHECK(b.shape(b.Gather("lookup", table, ids, 0)) == Shape{4, 7, 16});
  const int img = b.Input("img", {8, 3, 224, 224}, DType::kFloat16);
  const int kernel = b.Parameter("kernel", {64, 3, 7, 7}, DType::kFloat16);
  const int conv = b.Conv2D("conv", img, kernel, 2, 3);
  CHECK(b.shape(conv) == Shape{8, 64, 112, 112});
  CHECK(b.shape(b.Pool("MaxPool", "pool", conv, 3, 2, 1)) == Shape{8, 64, 56, 56});
  CHECK(b.shape(b.OneHot("onehot", ids, 10, DType::kFloat32)) == Shape{4, 7, 10});
  CHECK(b.graph().tensor(b.OneHot("onehot2", ids, 10, DType::kFloat32)).dtype == DType::kFloat32);
}

TEST_CASE("shape rules reject inconsistent operators with the operator's name") {
  GraphBuilder b("g");
  const int x = b.Input("x", {32, 64}, DType::kFloat16);
  const int w = b.Parameter("w", {32, 64}, DType::kFloat16);
  CHECK_THROWS_WITH(b.MatMul("mm", x, w, false, false),
                    Catch::Contains("\"mm\" (MatMul): reduction dimensions differ"));
  CHECK_THROWS_WITH(b.Binary("Add", "add", x, b.Input("y", {3, 64}, DType::kFloat16)),
                    Catch::Contains("do not broadcast"));
  CHECK_THROWS_WITH(b.Reshape("r", x, {7, 9}), Catch::Contains("cannot reshape [32,64] to [7,9]"));
  CHECK_THROWS_WITH(b.Transpose("t", x, {0, 0}), Catch::Contains("not a permutation"));
  CHECK_THROWS_WITH(b.Reduce("ReduceSum", "s", x, {2}, false), Catch::Contains("axis 2 is out of range"));
  CHECK_THROWS_WITH(b.Gather("g", w, x, 0), Catch::Contains("indices must be int32 or int64"));
  CHECK_THROWS_WITH(b.Dropout("d", x, 1.5), Catch::Contains("keep_prob"));
  CHECK_THROWS_WITH(b.BiasAdd("b", x, b.Parameter("bias", {32}, DType::kFloat16)), Catch::Contains("channel"));
}

TEST_CASE("graph names are unique and operator types known") {
  Graph g("g");
  g.AddInput("x", {4}, DType::kFloat32);
  CHECK_THROWS_WITH(g.AddInput("x", {4}, DType::kFloat32), Catch::Contains("used twice"));
  Operator op;
  op.name = "act";
  op.type = "Relu";
  op.inputs = {0};
  CHECK_THROWS_WITH(g.AddOperator(op), Catch::Contains("did you mean 'ReLU'"));
  op.type = "ReLU";
  op.inputs = {0, 0};
  CHECK_THROWS_WITH(g.AddOperator(op), Catch::Contains("takes 1 input, got 2"));
  op.inputs = {5};
  CHECK_THROWS_WITH(g.AddOperator(op), Catch::Contains("does not exist"));
  op.inputs = {0};
  const int index = g.AddOperator(op);
  CHECK(g.tensor(g.op(index).outputs[0]).name == "act");
  CHECK(g.tensor(g.op(index).outputs[0]).producer == index);
  CHECK(g.Consumers(0) == std::vector<int>{index});
  CHECK_THROWS_WITH(g.AddOperator(op), Catch::Contains("used twice"));
}

TEST_CASE("shape inference checks the input count and the attributes of every operator type") {
  // InferOutputs is what `shardlab layout` calls directly: the count is its check, not the graph's.
  Operator op;
  op.name = "mm";
  op.type = "MatMul";
  CHECK_THROWS_WITH(InferOutputs(op, {{{128, 64}, DType::kFloat16}}), Catch::Contains("takes 2 inputs, got 1"));
  for (const OpTypeInfo& type : OpTypes()) {
    INFO(type.name);
    op.type = type.name;
    const std::vector<TensorType> too_many(static_cast<size_t>(type.max_inputs) + 1, {{4, 4}, DType::kFloat32});
    CHECK_THROWS_WITH(InferOutputs(op, too_many), Catch::Contains("input"));
  }
  op.type = "MatMul";
  op.attrs["transposee_b"] = true;
  CHECK_THROWS_WITH(InferOutputs(op, {{{128, 64}, DType::kFloat16}, {{64, 32}, DType::kFloat16}}),
                    Catch::Contains("unknown attribute \"transposee_b\" (did you mean 'transpose_b'?)"));
  op.attrs = {{"primitive_target", std::string("CPU")}, {"transpose_b", true}};
  CHECK(InferOutputs(op, {{{128, 64}, DType::kFloat16}, {{32, 64}, DType::kFloat16}})[0].shape == Shape{128, 32});
}

TEST_CASE("operator work counts GEMM, convolution and element-wise FLOPs") {
  GraphBuilder b("g");
  const int x = b.Input("x", {32, 64}, DType::kFloat16);
  const int w = b.Parameter("w", {64, 128}, DType::kFloat16);
  b.MatMul("mm", x, w, false, false);
  const int img = b.Input("img", {1, 3, 8, 8}, DType::kFloat32);
  b.Conv2D("conv", img, b.Parameter("k", {4, 3, 3, 3}, DType::kFloat32), 1, 1);
  b.Activation("ReLU", "relu", x);
  const Graph g = b.Finish();
  const OpWork mm = ComputeOpWork(g, g.op(0));
  CHECK(mm.forward_flops == 2.0 * 32 * 64 * 128);
  CHECK(mm.backward_flops == 2 * mm.forward_flops);
  CHECK(mm.forward_bytes == 2.0 * (32 * 64 + 64 * 128 + 32 * 128));
  CHECK(ComputeOpWork(g, g.op(1)).forward_flops == 2.0 * (4 * 8 * 8) * (3 * 3 * 3));
  CHECK(ComputeOpWork(g, g.op(2)).forward_flops == 32.0 * 64);
}

}  // namespace
}  // namespace shardlab
