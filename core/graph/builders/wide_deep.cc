// Wide&Deep for click-through prediction (MindSpore model zoo layout): a wide
// linear part and a deep MLP over field embeddings from one large table. With
// host_embedding the embedding lookups run on the host CPU (MindSpore's
// primitive_target "CPU"), the host-device training of the seeds.
#include "core/graph/builders/model_builder.h"
#include "core/graph/graph_builder.h"

namespace shardlab {
namespace {

Graph BuildWideDeep(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options) {
  if (options.pipeline_stages > 1) throw GraphError("the wide_deep builder does not split into pipeline stages");
  const int64_t batch = params.Int("batch"), fields = params.Int("field_size");
  const int64_t vocab = params.Int("vocab_size"), emb = params.Int("emb_dim");
  const int64_t dp = params.Int("data_parallel"), mp = params.Int("model_parallel");
  const bool sharded = dp * mp > 1;
  auto shard = [sharded](Strategy s) -> GraphBuilder::OptStrategy {
    if (!sharded) return std::nullopt;
    return s;
  };
  GraphBuilder b(graph_name);
  const int ids = b.Input("feature_ids", {batch, fields}, DType::kInt32);
  const int values = b.Input("feature_values", {batch, fields}, DType::kFloat32);
  const int labels = b.Input("labels", {batch, 1}, DType::kFloat32);

  const int wide_table = b.Parameter("wide/table", {vocab, 1}, DType::kFloat32);
  const int deep_table = b.Parameter("deep/table", {vocab, emb}, DType::kFloat32);
  b.set_on_host(params.Bool("host_embedding"));
  int wide = b.Gather("wide/lookup", wide_table, ids, 0, shard({{1, 1}, {dp, 1}}));
  int deep = b.Gather("deep/lookup", deep_table, ids, 0, shard({{1, mp}, {dp, 1}}));
  b.set_on_host(false);
  const int weights = b.Reshape("field_weights", values, {batch, fields, 1});
  wide = b.Binary("Mul", "wide/scale", wide, weights, shard({{dp, 1, 1}, {dp, 1, 1}}));
  wide = b.Reduce("ReduceSum", "wide/sum", wide, {1}, false, shard({{dp, 1, 1}}));
  const int wide_bias = b.Parameter("wide/bias", {1}, DType::kFloat32);
  wide = b.BiasAdd("wide/bias_add", wide, wide_bias, shard({{dp, 1}, {1}}));

  deep = b.Binary("Mul", "deep/scale", deep, weights, shard({{dp, 1, mp}, {dp, 1, 1}}));
  deep = b.Reshape("deep/flatten", deep, {batch, fields * emb});
  const int64_t dims[] = {1024, 512, 256, 128, 1};
  for (size_t i = 0; i < std::size(dims); ++i) {
    const std::string name = "deep/dense" + std::to_string(i + 1);
    const int64_t in_dim = b.shape(deep)[1];
    const int w = b.Parameter(name + ".weight", {dims[i], in_dim}, DType::kFloat32);
    const int bias = b.Parameter(name + ".bias", {dims[i]}, DType::kFloat32);
    deep = b.MatMul(name, deep, w, false, true, shard({{dp, 1}, {1, 1}}));
    deep = b.BiasAdd(name + ".bias_add", deep, bias, shard({{dp, 1}, {1}}));
    if (i + 1 < std::size(dims)) deep = b.Activation("ReLU", name + "_relu", deep, shard({{dp, 1}}));
  }
  const int logits = b.Binary("Add", "wide_plus_deep", wide, deep, shard({{dp, 1}, {dp, 1}}));
  const int loss = b.SigmoidCrossEntropy("loss/sigmoid_cross_entropy", logits, labels, shard({{dp, 1}, {dp, 1}}));
  b.Reduce("ReduceMean", "loss/mean", loss, {}, false, shard({{dp, 1}}));
  return b.Finish();
}

}  // namespace

ModelBuilder WideDeepBuilder() {
  return {"wide_deep",
          "Wide&Deep click-through model on Criteo-style fields",
          {
              {"batch", int64_t{16000}, "samples per micro-batch (set by a run)", 1, 1 << 24},
              {"field_size", int64_t{39}, "feature fields per sample", 1, 1 << 16},
              {"vocab_size", int64_t{200000}, "rows of the embedding tables", 1, int64_t{1} << 31},
              {"emb_dim", int64_t{80}, "embedding width of the deep part", 1, 1 << 16},
              {"data_parallel", int64_t{1}, "batch split of the strategies", 1, 4096},
              {"model_parallel", int64_t{1}, "column split of the deep embedding table", 1, 4096},
              {"host_embedding", false, "run the embedding lookups on the host CPU"},
          },
          &BuildWideDeep};
}

}  // namespace shardlab
