#include "core/graph/builders/model_builder.h"
#include "core/ops/flops.h"
#include "core/report/graph_summary.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

Graph Build(const std::string& builder, std::map<std::string, ParamValue> overrides = {}, BuildOptions options = {}) {
  const ModelBuilder* b = FindModelBuilder(builder);
  REQUIRE(b != nullptr);
  BuilderParams params = b->Defaults();
  for (auto& [key, value] : overrides) params.Set(key, value);
  return b->build(builder, params, options);
}

TEST_CASE("ResNet-50 has the 25,557,032 trainable parameters of the reference model") {
  const Graph g = Build("resnet50", {{"batch", int64_t{2}}});
  const GraphSummary s = SummarizeGraph(g, 2);
  CHECK(s.parameters == 25557032);
  CHECK(s.operators_by_type.at("Conv2D") == 53);
  // About 4.1 GMACs per 224x224 image forward.
  CHECK(s.forward_flops_per_sample() == Approx(8.2e9).epsilon(0.03));
}

TEST_CASE("GPT-3 175B has 175 B parameters and Megatron's FLOP count") {
  const Graph g = Build("gpt", {{"layers", int64_t{96}},
                                {"hidden", int64_t{12288}},
                                {"heads", int64_t{96}},
                                {"seq_length", int64_t{2048}},
                                {"vocab_size", int64_t{51200}}});
  const GraphSummary s = SummarizeGraph(g, 1);
  CHECK(s.parameters == Approx(174.6e9).epsilon(0.005));
  // Megatron: 24 s l h^2 (1 + s/6h + V/12lh) forward FLOPs per sequence.
  const double S = 2048, L = 96, H = 12288, V = 51200;
  CHECK(s.forward_flops_per_sample() ==
        Approx(24 * S * L * H * H * (1 + S / (6 * H) + V / (12 * L * H))).epsilon(0.02));
  CHECK(s.operators_by_type.at("BatchMatMul") == 2 * 96);
}

TEST_CASE("packed documents restrict flash attention to each document") {
  const std::map<std::string, ParamValue> base = {{"layers", int64_t{2}},
                                                  {"hidden", int64_t{1024}},
                                                  {"heads", int64_t{8}},
                                                  {"seq_length", int64_t{4096}},
                                                  {"attention", std::string("flash")}};
  auto attention = [](const Graph& g) -> const Operator& {
    for (const Operator& op : g.operators())
      if (op.type == "FlashAttentionScore") return op;
    FAIL("no attention");
    return g.operators().front();
  };
  const Graph whole = Build("gpt", base);
  std::map<std::string, ParamValue> packed = base;
  packed["document_length"] = int64_t{1024};
  const Graph documents = Build("gpt", packed);
  const Operator &a = attention(whole), &b = attention(documents);
  CHECK(b.IntAttr("document_length", 0) == 1024);
  // A quarter of the (query, key) pairs: each query sees its 1024-token document only.
  CHECK(ComputeOpWork(documents, b).forward_flops == Approx(ComputeOpWork(whole, a).forward_flops / 4));
  CHECK(ComputeModelFlops(documents, b).forward == Approx(ComputeModelFlops(whole, a).forward / 4));
  // Only flash attention skips the other documents; and a document fits its sequence.
  packed["attention"] = std::string("eager");
  CHECK_THROWS_WITH(Build("gpt", packed), Catch::Contains("only flash attention"));
  packed["attention"] = std::string("flash");
  packed["document_length"] = int64_t{8192};
  CHECK_THROWS_WITH(Build("gpt", packed), Catch::Contains("longer than seq_length 4096"));
}

TEST_CASE("GeGLU and SwiGLU gate the same three matrices, each with its own activation") {
  // 2 layers, hidden 512, ffn 1536, 8 heads, vocabulary 1000, untied, no biases.
  std::map<std::string, ParamValue> base = {{"layers", int64_t{2}},
                                            {"hidden", int64_t{512}},
                                            {"ffn_hidden", int64_t{1536}},
                                            {"heads", int64_t{8}},
                                            {"seq_length", int64_t{128}},
                                            {"vocab_size", int64_t{1000}},
                                            {"linear_bias", std::string("none")},
                                            {"tie_word_embeddings", false}};
  std::map<std::string, int64_t> parameters;
  for (const char* activation : {"gelu", "geglu", "swiglu"}) {
    auto params = base;
    params["activation"] = std::string(activation);
    const GraphSummary s = SummarizeGraph(Build("gpt", params), 1);
    parameters[activation] = s.parameters;
    INFO(activation);
    const bool gelu = std::string(activation) != "swiglu";
    const auto count = [&](const char* type) {
      return s.operators_by_type.count(type) ? s.operators_by_type.at(type) : int64_t{0};
    };
    CHECK(count("GeLU") == (gelu ? 2 : 0));  // one a layer
    CHECK(count("SiLU") == (gelu ? 0 : 2));
  }
  // A gated MLP adds the up projection, hidden x ffn per layer; both gates have it.
  CHECK(parameters["geglu"] == parameters["swiglu"]);
  CHECK(parameters["geglu"] - parameters["gelu"] == 2 * 512 * 1536);
}

TEST_CASE("multi-query attention keeps one key and one value head") {
  std::map<std::string, ParamValue> params = {{"layers", int64_t{2}},        {"hidden", int64_t{1024}},
                                              {"heads", int64_t{16}},        {"seq_length", int64_t{128}},
                                              {"vocab_size", int64_t{1000}}, {"linear_bias", std::string("none")}};
  const int64_t mha = SummarizeGraph(Build("gpt", params), 1).parameters;
  params["kv_heads"] = int64_t{1};
  const int64_t mqa = SummarizeGraph(Build("gpt", params), 1).parameters;
  // Key and value projections shrink from 16 heads of 64 to one: 2 x 15 x 64 x 1024 per layer.
  CHECK(mha - mqa == 2 * 2 * 15 * 64 * 1024);
}

TEST_CASE("the router's balance loss is a few small operators of every mixture-of-experts layer") {
  std::map<std::string, ParamValue> params = {
      {"layers", int64_t{3}},           {"hidden", int64_t{256}},      {"heads", int64_t{4}},
      {"seq_length", int64_t{64}},      {"vocab_size", int64_t{1000}}, {"experts", int64_t{8}},
      {"experts_per_token", int64_t{2}}};
  const Graph with = Build("gpt", params);
  params["router_aux_loss"] = false;
  const Graph without = Build("gpt", params);
  int64_t aux_ops = 0;
  for (const Operator& op : with.operators()) aux_ops += op.name.find("moe/aux_loss/") != std::string::npos;
  CHECK(aux_ops == 3 * 6);  // reshape, mean, one-hot, load, product, sum per layer
  CHECK(static_cast<int64_t>(with.operators().size()) - static_cast<int64_t>(without.operators().size()) == aux_ops);
  // No parameters, and under 1% of the layer's work.
  const GraphSummary a = SummarizeGraph(with, 1), b = SummarizeGraph(without, 1);
  CHECK(a.parameters == b.parameters);
  CHECK(a.forward_flops_per_sample() > b.forward_flops_per_sample());
  CHECK(a.forward_flops_per_sample() < 1.01 * b.forward_flops_per_sample());
}

TEST_CASE("BERT-large has about 335 M parameters") {
  const GraphSummary s = SummarizeGraph(Build("bert"), 1);
  CHECK(s.parameters > 330e6);
  CHECK(s.parameters < 340e6);
}

TEST_CASE("model_parallel places Megatron column and row strategies") {
  const Graph g = Build("gpt", {{"layers", int64_t{2}},
                                {"hidden", int64_t{64}},
                                {"heads", int64_t{8}},
                                {"seq_length", int64_t{16}},
                                {"vocab_size", int64_t{128}},
                                {"batch", int64_t{4}},
                                {"data_parallel", int64_t{2}},
                                {"model_parallel", int64_t{4}}});
  const Operator& qkv = g.op(*g.FindOperator("layer0/attention/query"));
  CHECK(*qkv.strategy == Strategy{{2, 1}, {4, 1}});
  const Operator& proj = g.op(*g.FindOperator("layer1/ffn/projection"));
  CHECK(*proj.strategy == Strategy{{2, 4}, {1, 4}});
  const Graph unsharded = Build("gpt", {{"layers", int64_t{1}}, {"hidden", int64_t{64}}, {"heads", int64_t{8}}});
  for (const auto& op : unsharded.operators()) CHECK_FALSE(op.strategy.has_value());
}

TEST_CASE("pipeline stages split layers evenly and untie the LM head") {
  const Graph g =
      Build("gpt", {{"layers", int64_t{8}}, {"hidden", int64_t{64}}, {"heads", int64_t{8}}}, BuildOptions{4, false});
  CHECK(g.stage_count() == 4);
  CHECK(g.op(*g.FindOperator("embedding/word")).pipeline_stage == 0);
  CHECK(g.op(*g.FindOperator("layer1/ffn/mapping")).pipeline_stage == 0);
  CHECK(g.op(*g.FindOperator("layer2/ffn/mapping")).pipeline_stage == 1);
  CHECK(g.op(*g.FindOperator("layer7/ffn/mapping")).pipeline_stage == 3);
  CHECK(g.op(*g.FindOperator("head/logits")).pipeline_stage == 3);
  CHECK(g.FindTensor("head/word.table").has_value());
  CHECK_THROWS_WITH(Build("gpt", {{"layers", int64_t{2}}}, BuildOptions{4, false}),
                    Catch::Contains("cannot fill pipeline_stages 4"));
}

TEST_CASE("offset moves layers between pipeline stages as MindFormers does") {
  const std::map<std::string, ParamValue> small = {
      {"layers", int64_t{10}}, {"hidden", int64_t{64}}, {"heads", int64_t{8}}};
  auto with_offset = [&](std::vector<int64_t> offset) {
    auto params = small;
    params["offset"] = std::move(offset);
    return params;
  };
  auto layers_on = [](const Graph& g, int64_t stage) {
    int count = 0;
    for (int layer = 0; layer < 10; ++layer)
      count += g.op(*g.FindOperator("layer" + std::to_string(layer) + "/ffn/mapping")).pipeline_stage == stage;
    return count;
  };
  // 10 layers over 4 stages: 2 each plus the offsets' 2 extra, here on the middle stages.
  const Graph g = Build("gpt", with_offset({0, 1, 1, 0}), BuildOptions{4, false});
  CHECK(layers_on(g, 0) == 2);
  CHECK(layers_on(g, 1) == 3);
  CHECK(layers_on(g, 2) == 3);
  CHECK(layers_on(g, 3) == 2);
  // Without an offset the first stages take one more.
  const Graph even = Build("gpt", small, BuildOptions{4, false});
  CHECK(layers_on(even, 0) == 3);
  CHECK(layers_on(even, 3) == 2);
  CHECK_THROWS_WITH(Build("gpt", with_offset({0, 1, 1}), BuildOptions{4, false}),
                    Catch::Contains("offset has 3 entries but there are 4 pipeline stages"));
  CHECK_THROWS_WITH(Build("gpt", with_offset({1, 1, 1, 0}), BuildOptions{4, false}),
                    Catch::Contains("must add up to 2 (10 % 4)"));
  CHECK_THROWS_WITH(Build("gpt", with_offset({-2, 2, 1, 1}), BuildOptions{4, false}),
                    Catch::Contains("leaves pipeline stage 0 with 0 layers"));
}

TEST_CASE("recompute marks the transformer layers only") {
  const Graph g =
      Build("gpt", {{"layers", int64_t{2}}, {"hidden", int64_t{64}}, {"heads", int64_t{8}}}, BuildOptions{1, true});
  CHECK(g.op(*g.FindOperator("layer0/ffn/gelu")).recompute);
  CHECK_FALSE(g.op(*g.FindOperator("head/logits")).recompute);
}

TEST_CASE("Wide&Deep host embedding runs its lookups on the host") {
  const Graph g = Build("wide_deep", {{"host_embedding", true}, {"batch", int64_t{8}}});
  CHECK(g.op(*g.FindOperator("deep/lookup")).StringAttr("primitive_target", "") == "CPU");
  CHECK(g.op(*g.FindOperator("deep/dense1")).StringAttr("primitive_target", "") == "");
  const GraphSummary s = SummarizeGraph(g, 8);
  CHECK(s.host_operators == 2);
  CHECK(s.parameters > 200000 * 81);
}

TEST_CASE("the seed FFN carries the example's strategies") {
  const Graph g = Build("ffn");
  CHECK(*g.op(*g.FindOperator("dense1")).strategy == Strategy{{2, 4}, {4, 1}});
  CHECK(*g.op(*g.FindOperator("dense3")).strategy == Strategy{{1, 8}, {8, 1}});
  CHECK_FALSE(g.op(*g.FindOperator("dense2")).strategy.has_value());
  CHECK(g.tensor(*g.FindTensor("dense1.weight")).shape == Shape{784, 512});
}

}  // namespace
}  // namespace shardlab
