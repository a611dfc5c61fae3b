// GPT (pre-LayerNorm decoder) and BERT (post-LayerNorm encoder) stacks, laid
// out as MindFormers lays them out: activations as [batch*seq, hidden], Dense
// layers as MatMul(transpose_b) + BiasAdd, and with data_parallel /
// model_parallel set, Megatron-style strategies (column-parallel QKV and FFN
// mapping, row-parallel projections, heads split across model_parallel).
#include <cmath>

#include "core/graph/builders/model_builder.h"
#include "core/graph/graph_builder.h"

namespace shardlab {
namespace {

constexpr double kKeepProb = 0.9;

struct Dims {
  int64_t layers, hidden, heads, ffn, seq, vocab, batch;
  int64_t dp, mp;
  bool sharded;       // place MindFormers strategies
  bool all_ops;       // on every operator (false: on the weight MatMuls only, for sharding_propagation)
  bool vocab_emb_dp;  // embedding table replicated (true) or split by rows over model_parallel
  DType dtype;

  int64_t tokens() const { return batch * seq; }
  int64_t head_dim() const { return hidden / heads; }
};

Dims ReadDims(const BuilderParams& p) {
  Dims d;
  d.layers = p.Int("layers");
  d.hidden = p.Int("hidden");
  d.heads = p.Int("heads");
  d.ffn = p.Int("ffn_hidden") > 0 ? p.Int("ffn_hidden") : 4 * d.hidden;
  d.seq = p.Int("seq_length");
  d.vocab = p.Int("vocab_size");
  d.batch = p.Int("batch");
  d.dp = p.Int("data_parallel");
  d.mp = p.Int("model_parallel");
  d.sharded = d.dp * d.mp > 1;
  d.all_ops = p.String("shard_scope") == "all";
  d.vocab_emb_dp = p.Bool("vocab_emb_dp");
  d.dtype = *ParseDType(p.String("dtype"));
  if (d.hidden % d.heads != 0)
    throw GraphError("hidden " + std::to_string(d.hidden) + " is not divisible by heads " + std::to_string(d.heads));
  return d;
}

// Strategies only when the model is sharded; otherwise MindSpore's default applies.
struct Shard {
  bool on;
  GraphBuilder::OptStrategy operator()(Strategy s) const {
    if (!on) return std::nullopt;
    return s;
  }
};

std::vector<ParamSpec> TransformerParams(int64_t layers, int64_t hidden, int64_t heads, int64_t seq, int64_t vocab) {
  return {
      {"layers", layers, "transformer layers", 1, 4096},
      {"hidden", hidden, "hidden size", 1, 1 << 20},
      {"heads", heads, "attention heads", 1, 4096},
      {"ffn_hidden", int64_t{0}, "FFN inner size (0: 4 x hidden)", 0, 1 << 22},
      {"seq_length", seq, "sequence length", 1, 1 << 20},
      {"vocab_size", vocab, "vocabulary size", 1, 1 << 24},
      {"batch", int64_t{1}, "samples per micro-batch (set by a run from global_batch_size / micro_batch_num)", 1,
       1 << 24},
      {"data_parallel", int64_t{1}, "MindFormers data_parallel: batch split of the strategies", 1, 131072},
      {"model_parallel", int64_t{1}, "MindFormers model_parallel: tensor split of the strategies", 1, 4096},
      {"vocab_emb_dp", true, "replicate the embedding table (false: split its rows over model_parallel)"},
      {"shard_scope",
       std::string("all"),
       "which operators get strategies: all, or weight_matmuls (the rest for sharding_propagation to fill)",
       0,
       0,
       {"all", "weight_matmuls"}},
      {"dtype",
       std::string("float16"),
       "compute dtype of weights and activations",
       0,
       0,
       {"float16", "bfloat16", "float32"}},
  };
}

// Multi-head self-attention on x [tokens, hidden]; returns the projected output.
int Attention(GraphBuilder& b, const Dims& d, int x, int mask) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t dp = d.dp, mp = d.mp, h = d.hidden;
  auto column = [&](const std::string& name) {
    const int w = b.Parameter(name + ".weight", {h, h}, d.dtype);
    const int bias = b.Parameter(name + ".bias", {h}, d.dtype);
    const int y = b.MatMul(name, x, w, false, true, Shard{d.sharded}({{dp, 1}, {mp, 1}}));
    return b.BiasAdd(name + ".bias_add", y, bias, shard({{dp, mp}, {mp}}));
  };
  const int q = column("attention/query");
  const int k = column("attention/key");
  const int v = column("attention/value");
  const Shape split = {d.batch, d.seq, d.heads, d.head_dim()};
  const Strategy heads4 = {{dp, 1, mp, 1}};
  const int qh =
      b.Transpose("attention/query_heads", b.Reshape("attention/query_split", q, split), {0, 2, 1, 3}, shard(heads4));
  const int kh =
      b.Transpose("attention/key_heads", b.Reshape("attention/key_split", k, split), {0, 2, 3, 1}, shard(heads4));
  const int vh =
      b.Transpose("attention/value_heads", b.Reshape("attention/value_split", v, split), {0, 2, 1, 3}, shard(heads4));
  const Strategy per_head = {{dp, mp, 1, 1}, {dp, mp, 1, 1}};
  int scores = b.BatchMatMul("attention/scores", qh, kh, false, false, shard(per_head));
  scores = b.Binary("Add", "attention/mask_add", scores, mask, shard({{dp, mp, 1, 1}, {dp, 1, 1, 1}}));
  int probs = b.Softmax("attention/softmax", scores, -1, shard({{dp, mp, 1, 1}}));
  probs = b.Dropout("attention/probs_dropout", probs, kKeepProb, shard({{dp, mp, 1, 1}}));
  const int context = b.BatchMatMul("attention/context", probs, vh, false, false, shard(per_head));
  const int merged = b.Transpose("attention/merge_heads", context, {0, 2, 1, 3}, shard({{dp, mp, 1, 1}}));
  const int flat = b.Reshape("attention/merge", merged, {d.tokens(), h});
  const int wo = b.Parameter("attention/projection.weight", {h, h}, d.dtype);
  const int bo = b.Parameter("attention/projection.bias", {h}, d.dtype);
  const int out = b.MatMul("attention/projection", flat, wo, false, true, Shard{d.sharded}({{dp, mp}, {1, mp}}));
  return b.BiasAdd("attention/projection.bias_add", out, bo, shard({{dp, 1}, {1}}));
}

// Position-wise FFN: column-parallel mapping, GeLU, row-parallel projection.
int FeedForward(GraphBuilder& b, const Dims& d, int x) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t dp = d.dp, mp = d.mp;
  const int w1 = b.Parameter("ffn/mapping.weight", {d.ffn, d.hidden}, d.dtype);
  const int b1 = b.Parameter("ffn/mapping.bias", {d.ffn}, d.dtype);
  const int w2 = b.Parameter("ffn/projection.weight", {d.hidden, d.ffn}, d.dtype);
  const int b2 = b.Parameter("ffn/projection.bias", {d.hidden}, d.dtype);
  int y = b.MatMul("ffn/mapping", x, w1, false, true, Shard{d.sharded}({{dp, 1}, {mp, 1}}));
  y = b.BiasAdd("ffn/mapping.bias_add", y, b1, shard({{dp, mp}, {mp}}));
  y = b.Activation("GeLU", "ffn/gelu", y, shard({{dp, mp}}));
  y = b.MatMul("ffn/projection", y, w2, false, true, Shard{d.sharded}({{dp, mp}, {1, mp}}));
  return b.BiasAdd("ffn/projection.bias_add", y, b2, shard({{dp, 1}, {1}}));
}

int LayerNorm(GraphBuilder& b, const Dims& d, const std::string& name, int x) {
  const int gamma = b.Parameter(name + ".gamma", {d.hidden}, DType::kFloat32);
  const int beta = b.Parameter(name + ".beta", {d.hidden}, DType::kFloat32);
  return b.LayerNorm(name, x, gamma, beta, Shard{d.sharded && d.all_ops}({{d.dp, 1}, {1}, {1}}));
}

int Residual(GraphBuilder& b, const Dims& d, const std::string& name, int x, int branch) {
  const Shard shard{d.sharded && d.all_ops};
  branch = b.Dropout(name + "_dropout", branch, kKeepProb, shard({{d.dp, 1}}));
  return b.Binary("Add", name, x, branch, shard({{d.dp, 1}, {d.dp, 1}}));
}

// Gathers token and position embeddings; returns [tokens, hidden] and the table.
std::pair<int, int> Embeddings(GraphBuilder& b, const Dims& d, int input_ids, int position_ids) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t table_split = d.vocab_emb_dp ? 1 : d.mp;
  const int table = b.Parameter("embedding/word.table", {d.vocab, d.hidden}, d.dtype);
  const int positions = b.Parameter("embedding/position.table", {d.seq, d.hidden}, d.dtype);
  const int words = b.Gather("embedding/word", table, input_ids, 0, shard({{table_split, 1}, {d.dp, 1}}));
  const int pos = b.Gather("embedding/position", positions, position_ids, 0, shard({{1, 1}, {d.dp, 1}}));
  int x = b.Binary("Add", "embedding/add", words, pos, shard({{d.dp, 1, 1}, {d.dp, 1, 1}}));
  x = b.Reshape("embedding/flatten", x, {d.tokens(), d.hidden});
  return {x, table};
}

// Token-level softmax cross-entropy against one-hot labels, averaged.
int LanguageModelLoss(GraphBuilder& b, const Dims& d, const std::string& name, int logits, int labels,
                      int64_t classes) {
  const Shard shard{d.sharded && d.all_ops};
  const int onehot = b.OneHot(name + "/onehot", labels, classes, DType::kFloat32, shard({{d.dp, 1}}));
  const int logits32 = b.Cast(name + "/cast", logits, DType::kFloat32, shard({{d.dp, 1}}));
  const int loss = b.SoftmaxCrossEntropy(name + "/cross_entropy", logits32, onehot, shard({{d.dp, 1}, {d.dp, 1}}));
  return b.Reduce("ReduceMean", name + "/mean", loss, {}, false, shard({{d.dp}}));
}

Graph BuildGpt(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options) {
  const Dims d = ReadDims(params);
  const int64_t stages = options.pipeline_stages;
  if (d.layers < stages)
    throw GraphError("layers " + std::to_string(d.layers) + " cannot fill pipeline_stages " + std::to_string(stages));
  GraphBuilder b(graph_name);
  const Shard shard{d.sharded && d.all_ops};
  const int input_ids = b.Input("input_ids", {d.batch, d.seq}, DType::kInt32);
  const int position_ids = b.Input("position_ids", {d.batch, d.seq}, DType::kInt32);
  const int mask = b.Input("attention_mask", {d.batch, 1, d.seq, d.seq}, d.dtype);
  const int labels = b.Input("labels", {d.tokens()}, DType::kInt32);

  auto [x, table] = Embeddings(b, d, input_ids, position_ids);
  x = b.Dropout("embedding/dropout", x, kKeepProb, shard({{d.dp, 1}}));
  for (int64_t layer = 0; layer < d.layers; ++layer) {
    b.set_stage(StageOfLayer(layer, d.layers, stages));
    b.set_scope("layer" + std::to_string(layer) + "/");
    b.set_recompute(options.recompute);
    const int attention = Attention(b, d, LayerNorm(b, d, "attention_norm", x), mask);
    x = Residual(b, d, "attention_residual", x, attention);
    const int ffn = FeedForward(b, d, LayerNorm(b, d, "ffn_norm", x));
    x = Residual(b, d, "ffn_residual", x, ffn);
  }
  b.set_recompute(false);
  b.set_scope("");
  b.set_stage(stages - 1);
  x = LayerNorm(b, d, "final_norm", x);
  // The LM head reuses the embedding table; across pipeline stages the last
  // stage holds its own copy, as MindSpore does for shared parameters.
  const int head = stages > 1 ? b.Parameter("head/word.table", {d.vocab, d.hidden}, d.dtype) : table;
  const int64_t vocab_split = d.vocab_emb_dp ? 1 : d.mp;
  const int logits = b.MatMul("head/logits", x, head, false, true, shard({{d.dp, 1}, {vocab_split, 1}}));
  LanguageModelLoss(b, d, "loss", logits, labels, d.vocab);
  return b.Finish();
}

Graph BuildBert(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options) {
  const Dims d = ReadDims(params);
  const int64_t stages = options.pipeline_stages;
  if (d.layers < stages)
    throw GraphError("layers " + std::to_string(d.layers) + " cannot fill pipeline_stages " + std::to_string(stages));
  const int64_t predictions = params.Int("max_predictions_per_seq");
  GraphBuilder b(graph_name);
  const Shard shard{d.sharded && d.all_ops};
  const int input_ids = b.Input("input_ids", {d.batch, d.seq}, DType::kInt32);
  const int position_ids = b.Input("position_ids", {d.batch, d.seq}, DType::kInt32);
  const int token_type_ids = b.Input("token_type_ids", {d.batch, d.seq}, DType::kInt32);
  const int mask = b.Input("attention_mask", {d.batch, 1, d.seq, d.seq}, d.dtype);
  const int masked_positions = b.Input("masked_lm_positions", {d.batch * predictions}, DType::kInt32);
  const int masked_labels = b.Input("masked_lm_ids", {d.batch * predictions}, DType::kInt32);
  // The [CLS] position is a constant of the network, not a dataset input.
  const int cls_index = b.Parameter("pooler/cls_index", {1}, DType::kInt32, false);
  const int nsp_labels = b.Input("next_sentence_labels", {d.batch}, DType::kInt32);

  auto [x, table] = Embeddings(b, d, input_ids, position_ids);
  const int types = b.Parameter("embedding/token_type.table", {2, d.hidden}, d.dtype);
  int type_emb = b.Gather("embedding/token_type", types, token_type_ids, 0, shard({{1, 1}, {d.dp, 1}}));
  type_emb = b.Reshape("embedding/token_type_flatten", type_emb, {d.tokens(), d.hidden});
  x = b.Binary("Add", "embedding/add_token_type", x, type_emb, shard({{d.dp, 1}, {d.dp, 1}}));
  x = LayerNorm(b, d, "embedding/norm", x);
  x = b.Dropout("embedding/dropout", x, kKeepProb, shard({{d.dp, 1}}));
  for (int64_t layer = 0; layer < d.layers; ++layer) {
    b.set_stage(StageOfLayer(layer, d.layers, stages));
    b.set_scope("layer" + std::to_string(layer) + "/");
    b.set_recompute(options.recompute);
    x = LayerNorm(b, d, "attention_norm", Residual(b, d, "attention_residual", x, Attention(b, d, x, mask)));
    x = LayerNorm(b, d, "ffn_norm", Residual(b, d, "ffn_residual", x, FeedForward(b, d, x)));
  }
  b.set_recompute(false);
  b.set_scope("");
  b.set_stage(stages - 1);
  const int64_t h = d.hidden;
  auto dense = [&](const std::string& name, int in, int64_t out_dim, int64_t in_dim) {
    const int w = b.Parameter(name + ".weight", {out_dim, in_dim}, d.dtype);
    const int bias = b.Parameter(name + ".bias", {out_dim}, d.dtype);
    const int y = b.MatMul(name, in, w, false, true, shard({{d.dp, 1}, {1, 1}}));
    return b.BiasAdd(name + ".bias_add", y, bias, shard({{d.dp, 1}, {1}}));
  };
  // Next-sentence prediction from the [CLS] token.
  const int sequence = b.Reshape("pooler/unflatten", x, {d.batch, d.seq, h});
  int cls = b.Gather("pooler/cls", sequence, cls_index, 1, shard({{d.dp, 1, 1}, {1}}));
  cls = b.Reshape("pooler/cls_flatten", cls, {d.batch, h});
  const int pooled = b.Activation("Tanh", "pooler/tanh", dense("pooler/dense", cls, h, h), shard({{d.dp, 1}}));
  const int nsp_logits = dense("nsp/dense", pooled, 2, h);
  const int nsp_loss = LanguageModelLoss(b, d, "nsp_loss", nsp_logits, nsp_labels, 2);
  // Masked-LM head on the masked positions, decoding with the embedding table.
  const int picked = b.BatchLocalGather("mlm/gather", x, masked_positions, shard({{1, 1}, {d.dp}}));
  int t = b.Activation("GeLU", "mlm/gelu", dense("mlm/dense", picked, h, h), shard({{d.dp, 1}}));
  t = LayerNorm(b, d, "mlm/norm", t);
  const int decoder = stages > 1 ? b.Parameter("mlm/word.table", {d.vocab, h}, d.dtype) : table;
  int logits = b.MatMul("mlm/decoder", t, decoder, false, true, shard({{d.dp, 1}, {1, 1}}));
  const int decoder_bias = b.Parameter("mlm/output.bias", {d.vocab}, d.dtype);
  logits = b.BiasAdd("mlm/output.bias_add", logits, decoder_bias, shard({{d.dp, 1}, {1}}));
  const int mlm_loss = LanguageModelLoss(b, d, "mlm_loss", logits, masked_labels, d.vocab);
  b.Binary("Add", "total_loss", mlm_loss, nsp_loss);
  return b.Finish();
}

}  // namespace

ModelBuilder GptBuilder() {
  return {"gpt", "GPT decoder stack (pre-LayerNorm), MindFormers layout", TransformerParams(24, 1024, 16, 1024, 51200),
          &BuildGpt};
}

ModelBuilder BertBuilder() {
  auto params = TransformerParams(24, 1024, 16, 512, 30522);
  params.push_back({"max_predictions_per_seq", int64_t{80}, "masked tokens per sequence", 1, 1 << 16});
  return {"bert", "BERT encoder stack (post-LayerNorm) with masked-LM and next-sentence heads", params, &BuildBert};
}

}  // namespace shardlab
