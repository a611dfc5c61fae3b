#include "core/ops/graph_layouts.h"

#include <catch2/catch.hpp>

#include "core/graph/builders/model_builder.h"
#include "core/graph/graph_builder.h"

namespace shardlab {
namespace {

TEST_CASE("seed 001: a weight split by rows in one Mul and by columns in another is an error") {
  GraphBuilder b("net");
  const int x = b.Input("x", {16, 32}, DType::kFloat32);
  const int w = b.Parameter("weight1", {16, 32}, DType::kFloat32);
  const int y = b.Binary("Mul", "mul1", x, w, Strategy{{8, 1}, {8, 1}});
  b.Binary("Mul", "mul2", y, w, Strategy{{1, 8}, {1, 8}});
  const Graph g = b.Finish();
  CHECK_THROWS_WITH(InferGraphLayouts(g, 8),
                    Catch::Contains("parameter \"weight1\" is shared by operators \"mul1\" and \"mul2\""));
}

TEST_CASE("unconfigured operators are data parallel and Reshape follows its producer") {
  GraphBuilder b("net");
  const int x = b.Input("x", {32, 64}, DType::kFloat32);
  const int w = b.Parameter("w", {64, 64}, DType::kFloat32);
  const int y = b.MatMul("mm", x, w, false, false);
  b.Reshape("r", y, {32, 8, 8});
  const Graph g = b.Finish();
  const auto layouts = InferGraphLayouts(g, 8);
  CHECK(layouts[0].strategy == Strategy{{8, 1}, {1, 1}});
  REQUIRE(layouts[0].mirror_comm.size() == 1);
  CHECK(layouts[0].mirror_comm[0].group_size == 8);
  CHECK(layouts[1].strategy == Strategy{{8, 1}});
  CHECK(layouts[1].device_matrix == Shape{8, 1});
  CHECK(layouts[1].outputs[0].tensor_map() == TensorMap{1, -1, -1});
}

TEST_CASE("configuring a Reshape is rejected") {
  Graph g("g");
  g.AddInput("x", {8, 8}, DType::kFloat32);
  Operator op;
  op.name = "r";
  op.type = "Reshape";
  op.inputs = {0};
  op.attrs["shape"] = std::vector<int64_t>{64};
  op.strategy = Strategy{{8, 1}};
  g.AddOperator(op);
  CHECK_THROWS_WITH(InferGraphLayouts(g, 8), Catch::Contains("strategy cannot be configured"));
}

TEST_CASE("the builders' MindFormers strategies are valid on their devices") {
  const ModelBuilder* gpt = FindModelBuilder("gpt");
  BuilderParams p = gpt->Defaults();
  p.Set("layers", int64_t{2});
  p.Set("batch", int64_t{8});
  p.Set("data_parallel", int64_t{2});
  p.Set("model_parallel", int64_t{4});
  const Graph g = gpt->build("gpt", p, BuildOptions{});
  const auto layouts = InferGraphLayouts(g, 8);
  const auto qkv = *g.FindOperator("layer0/attention/query");
  CHECK(layouts[qkv].device_matrix == Shape{2, 1, 4});
  CHECK(layouts[qkv].forward_comm.empty());
  const auto proj = *g.FindOperator("layer0/ffn/projection");
  REQUIRE(layouts[proj].forward_comm.size() == 1);
  CHECK(layouts[proj].forward_comm[0].group_size == 4);  // the row-parallel AllReduce
  // The attention heads reshape keeps the model-parallel split on the heads dimension.
  const auto split = *g.FindOperator("layer0/attention/query_split");
  CHECK(layouts[split].forward_comm.empty());
  for (const char* name : {"resnet50", "bert", "wide_deep", "ffn"}) {
    INFO(name);
    const ModelBuilder* builder = FindModelBuilder(name);
    BuilderParams params = builder->Defaults();
    if (std::string(name) == "bert") params.Set("layers", int64_t{2});
    if (std::string(name) != "ffn") params.Set("batch", int64_t{16});
    CHECK_NOTHROW(InferGraphLayouts(builder->build(name, params, BuildOptions{}), 8));
  }
}

}  // namespace
}  // namespace shardlab
