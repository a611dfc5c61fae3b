#include "core/config/model_config.h"

#include "core/graph/graph_json.h"

#include "tests/test_util.h"

namespace shardlab {
namespace {

using testing::Doc;
using testing::ExpectConfigError;

std::string ErrorAt(const std::string& text, const std::string& pointer) {
  Doc doc(text, "model.json");
  const ConfigError e = ExpectConfigError([&] { ReadModelSpec(doc.root()); });
  CHECK(e.pointer() == pointer);
  return e.what();
}

TEST_CASE("an explicit graph computes in the dtype of its tensors, as the builder model it was saved from") {
  Doc doc(R"({"name": "tiny", "builder": "gpt", "params": {"layers": 2, "hidden": 64, "heads": 4, "seq_length": 16,
              "vocab_size": 128, "dtype": "bfloat16"}})");
  const ModelSpec built = ReadModelSpec(doc.root());
  CHECK(ComputeDType(built) == DType::kBFloat16);
  const nlohmann::json explicit_graph = {{"name", "tiny"}, {"graph", GraphToJson(BuildModelGraph(built, BuildOptions{},
                                                                                              doc.root()))}};
  const ModelSpec loaded = ReadModelSpec(JsonNode(explicit_graph, "graph.json"));
  REQUIRE(loaded.graph.has_value());
  CHECK(ComputeDType(loaded) == DType::kBFloat16);
}

TEST_CASE("builder models fill in defaults and check parameters") {
  Doc doc(R"({"name": "tiny", "builder": "gpt", "params": {"layers": 2, "hidden": 64, "heads": 4}})");
  const ModelSpec m = ReadModelSpec(doc.root());
  CHECK(m.builder == "gpt");
  CHECK(m.params.Int("layers") == 2);
  CHECK(m.params.Int("seq_length") == 1024);
  CHECK(m.params.String("dtype") == "float16");
  CHECK_FALSE(m.graph.has_value());

  CHECK_THAT(ErrorAt(R"({"name": "x", "builder": "gtp"})", "/builder"), Catch::Contains("did you mean 'gpt'"));
  CHECK_THAT(ErrorAt(R"({"name": "x", "builder": "gpt", "params": {"layer": 2}})", "/params/layer"),
             Catch::Contains("did you mean 'layers'"));
  CHECK_THAT(ErrorAt(R"({"name": "x", "builder": "gpt", "params": {"layers": 0}})", "/params/layers"),
             Catch::Contains("1..4096"));
  CHECK_THAT(ErrorAt(R"({"name": "x", "builder": "gpt", "params": {"dtype": "float8"}})", "/params/dtype"),
             Catch::Contains("expected one of"));
  CHECK_THAT(ErrorAt(R"({"name": "x", "builder": "gpt", "params": {"vocab_emb_dp": "yes"}})", "/params/vocab_emb_dp"),
             Catch::Contains("true or false"));
}

TEST_CASE("a model is a builder or a graph, exactly one") {
  CHECK_THAT(ErrorAt(R"({"name": "x"})", ""), Catch::Contains("exactly one"));
  CHECK_THAT(ErrorAt(R"({"name": "x", "builder": "gpt", "graph": {}})", ""), Catch::Contains("exactly one"));
  CHECK_THAT(
      ErrorAt(R"({"name": "x", "graph": {"name": "g", "tensors": [], "operators": []}, "params": {}})", "/params"),
      Catch::Contains("belongs to builder models"));
}

TEST_CASE("builder errors name where the model came from") {
  Doc doc(R"({"name": "bad", "builder": "gpt", "params": {"hidden": 100, "heads": 3}})");
  const ModelSpec m = ReadModelSpec(doc.root());
  const ConfigError e = ExpectConfigError([&] { BuildModelGraph(m, {}, doc.root()); });
  CHECK_THAT(std::string(e.what()), Catch::Contains("hidden 100 is not divisible by heads 3"));
}

TEST_CASE("model_params override builder parameters") {
  Doc doc(R"({"name": "m", "builder": "gpt"})");
  ModelSpec m = ReadModelSpec(doc.root());
  Doc params(R"({"data_parallel": 4, "model_parallel": 2})");
  ApplyModelParams(m, params.root());
  CHECK(m.params.Int("data_parallel") == 4);
  CHECK(m.params.Int("model_parallel") == 2);
}

}  // namespace
}  // namespace shardlab
