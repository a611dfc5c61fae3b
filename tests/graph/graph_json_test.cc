#include "core/graph/graph_json.h"

#include "core/graph/builders/model_builder.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

using testing::Doc;
using testing::ExpectConfigError;

TEST_CASE("every builder's graph round-trips through JSON") {
  for (const auto& builder : ModelBuilders()) {
    INFO(builder.name);
    BuilderParams params = builder.Defaults();
    if (builder.name == "gpt" || builder.name == "bert") params.Set("layers", int64_t{2});
    const Graph g = builder.build(builder.name, params, BuildOptions{});
    const nlohmann::json first = GraphToJson(g);
    const Graph back = GraphFromJson(JsonNode(first, "graph.json"));
    CHECK(GraphToJson(back) == first);
    REQUIRE(back.operators().size() == g.operators().size());
    for (size_t i = 0; i < g.operators().size(); ++i) {
      CHECK(back.op(static_cast<int>(i)).attrs == g.op(static_cast<int>(i)).attrs);
      CHECK(back.op(static_cast<int>(i)).strategy == g.op(static_cast<int>(i)).strategy);
    }
    REQUIRE(back.tensors().size() == g.tensors().size());
    for (const Tensor& t : g.tensors()) {
      const Tensor& b = back.tensor(*back.FindTensor(t.name));
      CHECK(b.shape == t.shape);
      CHECK(b.dtype == t.dtype);
      CHECK(b.kind == t.kind);
      CHECK(b.requires_grad == t.requires_grad);
    }
  }
}

const char* kSmallGraph = R"({
  "name": "small",
  "tensors": [
    {"name": "x", "kind": "input", "shape": [8, 16], "dtype": "float32"},
    {"name": "w", "kind": "parameter", "shape": [16, 4], "dtype": "float32", "comm_fusion": 2, "layerwise_parallel": true}
  ],
  "operators": [
    {"name": "mm", "type": "MatMul", "inputs": ["x", "w"], "attrs": {"transpose_a": false, "transpose_b": false},
     "shard": [[2, 1], [1, 4]]},
    {"name": "act", "type": "ReLU", "inputs": ["mm"], "outputs": ["y"], "recompute": true},
    {"name": "out/act", "type": "ReLU", "inputs": ["y"], "outputs": ["z"], "offload_activations": true}
  ]})";

TEST_CASE("explicit graphs load with parameter attributes and strategies") {
  Doc doc(kSmallGraph);
  const Graph g = GraphFromJson(doc.root());
  CHECK(g.tensor(*g.FindTensor("w")).comm_fusion == 2);
  CHECK(g.tensor(*g.FindTensor("w")).layerwise_parallel);
  CHECK(*g.op(0).strategy == Strategy{{2, 1}, {1, 4}});
  CHECK(g.tensor(*g.FindTensor("y")).shape == Shape{8, 4});
  CHECK(g.op(1).recompute);
  CHECK_FALSE(g.op(1).offload_activations);
  CHECK(g.op(2).offload_activations);
  CHECK(GraphToJson(g)["operators"][2]["offload_activations"] == true);
}

std::string ErrorAt(nlohmann::json doc, const std::string& pointer) {
  const ConfigError e = ExpectConfigError([&] { GraphFromJson(JsonNode(doc, "graph.json")); });
  CHECK(e.pointer() == pointer);
  return e.what();
}

TEST_CASE("explicit graph errors point at the operator") {
  const nlohmann::json base = nlohmann::json::parse(kSmallGraph);
  auto doc = base;
  doc["operators"][1]["inputs"] = {"mn"};
  CHECK_THAT(ErrorAt(doc, "/operators/1/inputs/0"), Catch::Contains("did you mean 'mm'"));
  doc = base;
  doc["tensors"][1]["shape"] = {15, 4};
  CHECK_THAT(ErrorAt(doc, "/operators/0"), Catch::Contains("reduction dimensions differ"));
  doc = base;
  doc["operators"][0]["type"] = "Matmul";
  CHECK_THAT(ErrorAt(doc, "/operators/0"), Catch::Contains("did you mean 'MatMul'"));
  doc = base;
  doc["operators"][0]["shard"] = {{2, 0}, {1, 4}};
  CHECK_THAT(ErrorAt(doc, "/operators/0/shard/0/1"), Catch::Contains("1..4096"));
  doc = base;
  doc["operators"][0]["attrs"]["transpose_b"] = nlohmann::json::object();
  CHECK_THAT(ErrorAt(doc, "/operators/0/attrs/transpose_b"), Catch::Contains("expected a bool, number"));
  doc = base;
  doc["tensors"][0]["dtype"] = "fp32";
  CHECK_THAT(ErrorAt(doc, "/tensors/0/dtype"), Catch::Contains("expected one of"));
  doc = base;
  doc["tensors"][0]["kind"] = "activation";
  CHECK_THAT(ErrorAt(doc, "/tensors/0/kind"), Catch::Contains(R"("input", "parameter")"));
  doc = base;
  doc["operators"][1]["name"] = "mm";
  CHECK_THAT(ErrorAt(doc, "/operators/1"), Catch::Contains("used twice"));
  doc = base;
  doc["operators"] = nlohmann::json::array();
  CHECK_THAT(ErrorAt(doc, "/operators"), Catch::Contains("at least one operator"));
}

}  // namespace
}  // namespace shardlab
