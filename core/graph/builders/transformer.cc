// Transformer stacks, laid out as MindFormers lays them out: activations as
// [batch*seq, hidden], Dense layers as MatMul(transpose_b) (+ BiasAdd), and
// with data_parallel / model_parallel set, Megatron-style strategies
// (column-parallel QKV and FFN mapping, row-parallel projections, heads split
// across model_parallel). The decoder ("gpt") covers GPT-2/3 (LayerNorm,
// learned positions, GeLU, biases) and the LLaMA family (RMSNorm, RoPE,
// SwiGLU, grouped-query attention, no biases, untied embeddings) through its
// parameters; BERT is the post-LayerNorm encoder with its pre-training heads.
#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "core/graph/builders/model_builder.h"
#include "core/graph/graph_builder.h"

namespace shardlab {
namespace {

constexpr double kKeepProb = 0.9;

struct Dims {
  int64_t layers, hidden, heads, kv_heads, head_dim, ffn, seq, max_positions, vocab, batch;
  int64_t dp, mp;
  // Context parallel: each sequence split over cp devices outside attention
  // (tokens split dp x cp), the keys and values gathered for it.
  int64_t cp;
  // Of cp, the devices that exchange heads for sequence by AlltoAll around
  // attention (Ulysses: cp for ulysses_cp, ulysses_degree_in_cp for
  // hybrid_cp, 1 for colossalai_cp); the other cp / ulysses gather the keys
  // and values (ring), Ulysses innermost as MindFormers lays them out.
  int64_t ulysses;
  bool ring_attention;     // the keys and values passed around the cp group beside the attention compute
  int64_t document_length;  // packed documents: attention within each (0: the whole sequence)
  // Under context parallel, the sequences of a data-parallel slice that lie
  // end to end as one row (ReadDims then makes `batch` the dp rows and `seq`
  // a row's length): 1 with one sequence per slice.
  int64_t row_sequences = 1;
  // Sequence pipelining (seq_split_num > 1): the graph is one pass over
  // one of a sequence's seq_chunks chunks (`seq` tokens of each sample), its
  // attention reading the keys and values of the whole sequence (kv_seq)
  // from a cache the chunks fill in turn.
  int64_t seq_chunks;
  int64_t kv_seq() const { return seq * seq_chunks; }
  int64_t mtp_layers;      // multi-token prediction depths after the decoder (DeepSeek-V3's MTP)
  bool sharded;            // place MindFormers strategies
  bool all_ops;            // on every operator (false: on the weight MatMuls only, for sharding_propagation)
  bool vocab_emb_dp;       // embedding table replicated (true) or split by rows over model_parallel
  bool gated;              // gated MLP (SwiGLU, GeGLU): gate and up projections, their product projected down
  std::string activation;  // the MLP's operator: GeLU, FastGeLU, ReLU, SiLU
  bool rms_norm;
  std::string position;  // learned, rope, none
  bool bias_qkv, bias_rest;
  bool tied;   // LM head shares the input embedding table
  bool flash;  // one FlashAttentionScore operator instead of scores/softmax/context
  bool dropout;
  bool parallel_residual;  // GPT-NeoX, GPT-J: attention and MLP both read the layer input
  bool vocab_parallel_loss;
  bool qkv_concat, ffn_concat;
  bool seq_parallel;
  std::string fp8;  // the linear layers' fp8_format: off, e4m3, hybrid
  // Multi-head latent attention (kv_lora == 0: standard attention).
  int64_t q_lora, kv_lora, rope_dim, v_dim;
  // Mixture of experts (experts == 0: every layer has the dense MLP).
  int64_t experts, experts_per_token, moe_ffn, shared_experts, first_dense_layers, ep;
  // The experts' own tensor parallelism (their inner size split over etp
  // devices): model_parallel unless expert_tensor_parallel says otherwise.
  // The expert layers lay the stage's dp x cp x mp devices out as (expert
  // data parallel, ep, etp), etp innermost: Megatron's MoE parallel folding.
  int64_t etp;
  double capacity_factor;
  bool aux_loss;
  bool sigmoid_router;            // DeepSeek-V3 scores experts by sigmoid, not softmax
  bool expert_bias;               // with a per-expert bias in the selection (DeepSeek-V3's aux-loss-free balancing)
  bool fp8_dispatch;              // tokens exchanged toward their experts in FP8 (DeepSeek-V3)
  // Group-limited routing (DeepSeek's n_group / topk_group): the experts in
  // router_groups equal groups, each token's experts within router_group_topk of them.
  int64_t router_groups, router_group_topk;
  bool flex_dispatch;             // a token crosses once to each server holding its experts, then is forwarded (DeepEP)
  bool select_recompute = false;  // recompute the eager attention core only (set from the run's options)
  std::vector<RecomputeModule> recompute_modules;  // the parts recomputed (set from the run's options)
  bool Recomputes(RecomputeModule m) const {
    return std::find(recompute_modules.begin(), recompute_modules.end(), m) != recompute_modules.end();
  }
  // LoRA (lora_rank > 0): the base model frozen, low-rank adapters on the
  // linear layers `lora_targets` names.
  int64_t lora_rank;
  std::string lora_targets;

  // The split of the [tokens, ...] activations inside blocks (a sequence's
  // tokens lie on cp devices), and between blocks (over model_parallel too
  // under sequence parallelism).
  int64_t token_split() const { return dp * cp; }
  // The ways the vocabulary (the embedding table and the head) splits by rows.
  int64_t vocab_split() const { return vocab_emb_dp ? 1 : mp; }
  int64_t rows() const { return seq_parallel ? token_split() * mp : token_split(); }
  DType dtype;

  int64_t tokens() const { return batch * seq; }
  // Expert data parallel: the copies of each expert's weights. The expert
  // layers lay out every device of the stage, context parallel included.
  int64_t expert_groups() const { return dp * cp * mp / (ep * etp); }
  // The token groups routed per micro-batch: a sample, or its context-parallel
  // chunk, or under sequence parallelism a model_parallel share of that.
  int64_t routed_groups() const { return batch * row_sequences * cp * (seq_parallel ? mp : 1); }
  int64_t q_width() const { return heads * head_dim; }
  int64_t kv_width() const { return kv_heads * head_dim; }
};

std::string Text(int64_t v) { return std::to_string(v); }

Dims ReadDims(const BuilderParams& p) {
  Dims d;
  d.layers = p.Int("layers");
  d.hidden = p.Int("hidden");
  d.heads = p.Int("heads");
  d.kv_heads = p.Int("kv_heads") > 0 ? p.Int("kv_heads") : d.heads;
  d.head_dim = p.Int("head_dim") > 0 ? p.Int("head_dim") : d.hidden / d.heads;
  d.ffn = p.Int("ffn_hidden") > 0 ? p.Int("ffn_hidden") : 4 * d.hidden;
  d.seq = p.Int("seq_length");
  d.max_positions = p.Int("max_positions") > 0 ? p.Int("max_positions") : d.seq;
  d.seq_chunks = p.Int("seq_split_num");
  if (d.seq % d.seq_chunks != 0)
    throw GraphError("seq_split_num " + Text(d.seq_chunks) + " does not divide seq_length " + Text(d.seq));
  d.seq /= d.seq_chunks;
  d.mtp_layers = p.Int("mtp_num_layers");
  d.vocab = p.Int("vocab_size");
  d.batch = p.Int("batch");
  d.dp = p.Int("data_parallel");
  d.mp = p.Int("model_parallel");
  d.cp = p.Int("context_parallel");
  const std::string& cp_algo = p.String("context_parallel_algo");
  d.ulysses = cp_algo == "ulysses_cp" ? d.cp : cp_algo == "hybrid_cp" ? p.Int("ulysses_degree_in_cp") : 1;
  d.ring_attention = p.Bool("use_ring_attention");
  d.document_length = p.Int("document_length");
  d.sharded = d.dp * d.mp * d.cp > 1;
  d.all_ops = p.String("shard_scope") == "all";
  // As MindFormers' LLaMA: a vocabulary model_parallel does not divide stays whole.
  d.vocab_emb_dp = p.Bool("vocab_emb_dp") || d.vocab % d.mp != 0;
  const std::string& act = p.String("activation");
  d.gated = act == "swiglu" || act == "geglu";
  d.activation = act == "swiglu" ? "SiLU" : act == "relu" ? "ReLU" : act == "fast_gelu" ? "FastGeLU" : "GeLU";
  d.rms_norm = p.String("norm") == "rms_norm";
  d.position = p.String("position_embedding");
  d.bias_qkv = p.String("linear_bias") != "none";
  d.bias_rest = p.String("linear_bias") == "all";
  d.tied = p.Bool("tie_word_embeddings");
  d.flash = p.String("attention") == "flash";
  d.dropout = p.Bool("dropout");
  d.parallel_residual = p.Bool("parallel_residual");
  d.vocab_parallel_loss = p.String("loss") == "vocab_parallel";
  d.qkv_concat = p.Bool("qkv_concat");
  d.ffn_concat = p.Bool("ffn_concat");
  d.seq_parallel = p.Bool("use_seq_parallel") && d.mp > 1;
  d.fp8 = p.String("fp8");
  d.q_lora = p.Int("q_lora_rank");
  d.kv_lora = p.Int("kv_lora_rank");
  d.rope_dim = p.Int("rope_head_dim");
  d.v_dim = p.Int("v_head_dim") > 0 ? p.Int("v_head_dim") : d.head_dim;
  d.experts = p.Int("experts");
  d.experts_per_token = p.Int("experts_per_token");
  d.moe_ffn = p.Int("moe_ffn_hidden") > 0 ? p.Int("moe_ffn_hidden") : d.ffn;
  d.shared_experts = p.Int("shared_experts");
  d.first_dense_layers = p.Int("first_dense_layers");
  d.ep = p.Int("expert_parallel");
  d.etp = p.Int("expert_tensor_parallel") > 0 ? p.Int("expert_tensor_parallel") : d.mp;
  d.capacity_factor = p.Number("capacity_factor");
  d.aux_loss = p.Bool("router_aux_loss");
  d.sigmoid_router = p.String("router_scoring") == "sigmoid";
  d.expert_bias = p.Bool("router_expert_bias");
  d.fp8_dispatch = p.Bool("moe_fp8_dispatch");
  d.router_groups = p.Int("moe_router_num_groups");
  d.router_group_topk = p.Int("moe_router_group_topk");
  d.flex_dispatch = p.String("moe_token_dispatcher") == "flex";
  d.lora_rank = p.Int("lora_rank");
  d.lora_targets = p.String("lora_targets");
  if (d.kv_lora > 0) {
    if (!d.flash) throw GraphError("multi-head latent attention (kv_lora_rank > 0) needs attention \"flash\"");
    if (d.position != "rope" || d.rope_dim == 0 || d.rope_dim % 2 != 0)
      throw GraphError("multi-head latent attention needs position_embedding \"rope\" and an even rope_head_dim");
    if (d.qkv_concat) throw GraphError("multi-head latent attention has no fused qkv weight; set qkv_concat false");
    if (d.kv_heads != d.heads)
      throw GraphError("multi-head latent attention gives every query head its own key and value; kv_heads " +
                       Text(d.kv_heads) + " must equal heads " + Text(d.heads));
  }
  d.dtype = *ParseDType(p.String("dtype"));
  if (p.Int("head_dim") == 0 && d.hidden % d.heads != 0)
    throw GraphError("hidden " + Text(d.hidden) + " is not divisible by heads " + Text(d.heads) + "; set head_dim");
  if (d.heads % d.kv_heads != 0)
    throw GraphError("heads " + Text(d.heads) + " are not a multiple of kv_heads " + Text(d.kv_heads));
  if (d.sharded && d.kv_heads % d.mp != 0)
    throw GraphError("kv_heads " + Text(d.kv_heads) + " cannot be split over model_parallel " + Text(d.mp));
  if (d.seq_parallel && d.seq % d.mp != 0)
    throw GraphError("sequence parallel splits seq_length " + Text(d.seq) + " over model_parallel " + Text(d.mp) +
                     ", which does not divide it");
  if (d.cp > 1) {
    const std::string cp = "context_parallel " + Text(d.cp);
    if (d.ulysses < 1 || d.cp % d.ulysses != 0)
      throw GraphError("ulysses_degree_in_cp " + Text(d.ulysses) + " does not divide " + cp);
    if (d.ulysses > 1 && d.heads % (d.ulysses * d.mp) != 0)
      throw GraphError(cp + " exchanges heads for sequence over " + Text(d.ulysses) + " devices (Ulysses): heads " +
                       Text(d.heads) + " must divide into " + Text(d.ulysses) + " x model_parallel " + Text(d.mp));
    if (d.ulysses == d.cp && d.ring_attention)
      throw GraphError("use_ring_attention passes keys and values around the ring part of " + cp +
                       ", which context_parallel_algo \"ulysses_cp\" does not have");
    if (!d.flash) throw GraphError(cp + " needs attention \"flash\" (MindFormers use_flash_attention)");
    if (d.kv_lora > 0 && d.ulysses > 1)
      throw GraphError(cp +
                       " exchanges heads for sequence (Ulysses), which is not built for multi-head latent "
                       "attention; use context_parallel_algo colossalai_cp");
    // Under sequence pipelining each of a sequence's seq_split_num chunks splits.
    const std::string length =
        d.seq_chunks > 1 ? "a seq_split_num chunk's " + Text(d.seq) + " tokens" : "seq_length " + Text(d.seq);
    if (d.seq_parallel && d.seq % (d.cp * d.mp) != 0)
      throw GraphError(cp + " with sequence parallel splits " + length + " over context_parallel x " +
                       "model_parallel = " + Text(d.cp * d.mp) + ", which does not divide it");
    if (d.seq % (2 * d.cp) != 0)
      throw GraphError(cp + " splits each sequence into 2 x " + Text(d.cp) +
                       " chunks (balancing the causal mask), which " + length + " does not divide into");
    if (d.batch % d.dp != 0)
      throw GraphError(cp + " splits each sequence over the devices of a data-parallel slice: batch " + Text(d.batch) +
                       " is not a whole number of sequences per data_parallel " + Text(d.dp));
  } else if (p.String("context_parallel_algo") == "hybrid_cp" && p.Int("ulysses_degree_in_cp") > 1) {
    throw GraphError("ulysses_degree_in_cp " + Text(p.Int("ulysses_degree_in_cp")) +
                     " splits a context-parallel group; set context_parallel > 1");
  } else if (d.ring_attention) {
    throw GraphError(
        "use_ring_attention passes keys and values around a context-parallel group; set "
        "context_parallel > 1");
  }
  if (d.seq_chunks > 1) {
    const std::string split = "seq_split_num " + Text(d.seq_chunks);
    if (!d.flash) throw GraphError(split + " needs attention \"flash\" (MindFormers' seq_pipe does)");
    if (d.cp > 1 && d.ulysses > 1)
      throw GraphError(split + " is not built with Ulysses' exchange of heads (context_parallel_algo " +
                       p.String("context_parallel_algo") + "); use colossalai_cp");
    if (d.cp > 1 && d.ring_attention) throw GraphError(split + " is not built with use_ring_attention");
    if (d.cp > 1 && d.batch != d.dp)
      throw GraphError(split + " with context_parallel " + Text(d.cp) +
                       " is built for one sequence per data-parallel slice of a micro-batch: batch " + Text(d.batch) +
                       " is " + Text(d.batch / d.dp) + " per data_parallel " + Text(d.dp));
    if (d.kv_lora > 0) throw GraphError(split + " is not built for multi-head latent attention (kv_lora_rank)");
    if (d.document_length > 0) throw GraphError(split + " is not built with packed documents (document_length)");
  }
  if (d.document_length > 0 && !d.flash)
    throw GraphError("document_length " + Text(d.document_length) +
                     " restricts attention to packed documents, which only flash attention skips; set attention "
                     "flash");
  if (d.document_length > d.kv_seq())
    throw GraphError("document_length " + Text(d.document_length) + " is longer than seq_length " + Text(d.kv_seq()));
  if (d.experts > 0) {
    if (d.experts_per_token > d.experts)
      throw GraphError("experts_per_token " + Text(d.experts_per_token) + " exceeds experts " + Text(d.experts));
    if (d.capacity_factor <= 0) throw GraphError("capacity_factor must be > 0");
    if (d.experts % d.router_groups != 0)
      throw GraphError("moe_router_num_groups " + Text(d.router_groups) + " does not divide experts " +
                       Text(d.experts));
    if (d.router_group_topk > d.router_groups)
      throw GraphError("moe_router_group_topk " + Text(d.router_group_topk) + " exceeds moe_router_num_groups " +
                       Text(d.router_groups));
    if (d.experts_per_token > d.router_group_topk * (d.experts / d.router_groups))
      throw GraphError("experts_per_token " + Text(d.experts_per_token) + " exceeds the " +
                       Text(d.router_group_topk * (d.experts / d.router_groups)) +
                       " experts of moe_router_group_topk groups");
    if (d.experts % d.ep != 0)
      throw GraphError("expert_parallel " + Text(d.ep) + " does not divide experts " + Text(d.experts));
    if (d.etp == d.mp && (d.dp * d.cp) % d.ep != 0)
      throw GraphError("expert_parallel " + Text(d.ep) + " does not divide data_parallel " +
                       (d.cp > 1 ? "x context_parallel " + Text(d.dp * d.cp) : Text(d.dp)) +
                       " (MindFormers splits the experts over a part of the data-parallel devices; "
                       "expert_tensor_parallel below model_parallel lets them take tensor-parallel devices too)");
    if ((d.dp * d.cp * d.mp) % (d.ep * d.etp) != 0)
      throw GraphError("expert_parallel x expert_tensor_parallel = " + Text(d.ep) + " x " + Text(d.etp) +
                       " does not divide the " +
                       (d.cp > 1 ? "data_parallel x context_parallel x " : "data_parallel x ") +
                       "model_parallel = " + Text(d.dp * d.cp * d.mp) + " devices the expert layers lay out");
    if (d.moe_ffn % d.etp != 0)
      throw GraphError("expert_tensor_parallel " + Text(d.etp) + " does not divide the experts' inner size " +
                       Text(d.moe_ffn));
    const int64_t groups = d.routed_groups();
    if (groups % d.expert_groups() != 0)
      throw GraphError("the experts' " + Text(d.expert_groups()) +
                       " data-parallel copies (data_parallel x context_parallel x model_parallel / expert_parallel / "
                       "expert_tensor_parallel) do not divide the " +
                       Text(groups) + " token groups routed per micro-batch (batch" +
                       (d.cp > 1 ? " x context_parallel" : "") + (d.seq_parallel ? " x model_parallel" : "") + ")");
  } else if (d.ep > 1) {
    throw GraphError("expert_parallel " + Text(d.ep) + " needs a mixture-of-experts model (experts > 0)");
  } else if (p.Int("expert_tensor_parallel") > 0) {
    throw GraphError("expert_tensor_parallel needs a mixture-of-experts model (experts > 0)");
  }
  if (d.position == "rope" && d.head_dim % 2 != 0)
    throw GraphError("rotary position embedding needs an even head_dim, got " + Text(d.head_dim));
  if (d.position == "learned" && d.max_positions < d.kv_seq())
    throw GraphError("seq_length " + Text(d.kv_seq()) + " exceeds max_positions " + Text(d.max_positions));
  // Context parallel splits the [tokens, hidden] activations by contiguous
  // blocks of rows, a sequence's chunks only when a data-parallel slice holds
  // one sequence. With more, the slice's sequences lie end to end as one row
  // of packed sequences, attention kept inside each (document_length): each
  // device then holds as many tokens, gathers as many key and value bytes and
  // attends as many (query, key) pairs as when each sequence is split over
  // the group on its own (MindFormers' [batch, seq] split (dp, cp)), though
  // not the same ones.
  if (d.cp > 1 && d.batch > d.dp && d.seq_chunks == 1) {
    d.row_sequences = d.batch / d.dp;
    if (d.document_length == 0) d.document_length = d.seq;
    d.seq *= d.row_sequences;
    d.batch = d.dp;
  }
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
      {"heads", heads, "attention (query) heads", 1, 4096},
      {"kv_heads", int64_t{0}, "key/value heads: fewer than heads is grouped-query attention, 1 multi-query (0: heads)",
       0, 4096},
      {"head_dim", int64_t{0}, "size of one attention head (0: hidden / heads)", 0, 1 << 16},
      {"ffn_hidden", int64_t{0}, "FFN inner size (0: 4 x hidden)", 0, 1 << 22},
      {"seq_length", seq, "sequence length", 1, 1 << 20},
      {"max_positions", int64_t{0}, "rows of the learned position table (0: seq_length)", 0, 1 << 24},
      {"vocab_size", vocab, "vocabulary size", 1, 1 << 24},
      {"batch", int64_t{1}, "samples per micro-batch (set by a run from global_batch_size / micro_batch_num)", 1,
       1 << 24},
      {"data_parallel", int64_t{1}, "MindFormers data_parallel: batch split of the strategies", 1, 131072},
      {"model_parallel", int64_t{1}, "MindFormers model_parallel: tensor split of the strategies", 1, 4096},
      {"context_parallel", int64_t{1},
       "MindFormers context_parallel (decoder only): each sequence split over this many devices (tokens split "
       "data_parallel x context_parallel outside attention; keys and values gathered over the group for it)",
       1, 4096},
      {"context_parallel_algo",
       std::string("colossalai_cp"),
       "MindFormers context_parallel_algo: colossalai_cp (keys and values gathered over the context-parallel "
       "group), ulysses_cp (sequence exchanged for heads by AlltoAll around attention) or hybrid_cp (Ulysses "
       "over ulysses_degree_in_cp devices, keys and values gathered over the rest)",
       0,
       0,
       {"colossalai_cp", "ulysses_cp", "hybrid_cp"}},
      {"ulysses_degree_in_cp", int64_t{1},
       "MindFormers ulysses_degree_in_cp (context_parallel_algo hybrid_cp): the devices of the context-parallel "
       "group that exchange heads for sequence (innermost); the rest gather the keys and values",
       1, 4096},
      {"document_length", int64_t{0},
       "packed documents of this many tokens in each sequence, each attending only within itself (Megatron "
       "--reset-attention-mask, NeMo's packed sequences, MindFormers' EOD attention mask): attention FLOPs and its "
       "kernels' key length scale to it; needs attention flash (0: the whole sequence is one document)",
       0, 1 << 22},
      {"seq_split_num", int64_t{1},
       "MindFormers seq_split_num (sequence pipelining; decoder only): each micro-batch's sequences run through "
       "the pipeline as this many chunks, one pass each, a chunk's attention reading the keys and values of the "
       "chunks before it from a whole-length cache; needs a seq pipeline_schedule (seqpipe, seqvpp, seqsmartvpp) "
       "and attention flash; divides seq_length",
       1, 4096},
      {"mtp_num_layers", int64_t{0},
       "Megatron --mtp-num-layers (DeepSeek-V3's multi-token prediction; decoder only): depths after the last "
       "layer, each predicting one token further ahead from the depth before and the embedding of that token "
       "(both normed, joined, projected back to hidden), through one more layer like the last, the shared output "
       "head and a loss of its own; on the stage of the head, with a copy of the embedding table there "
       "(Hugging Face num_nextn_predict_layers)",
       0, 16},
      {"use_ring_attention", false,
       "ring attention (MindFormers use_ring_attention, Megatron cp_comm_type p2p; decoder only): keys and values "
       "passed around the context-parallel group beside the attention compute instead of gathered before it"},
      {"vocab_emb_dp", true,
       "replicate the embedding table and LM head (false: split their rows over model_parallel, when it divides the "
       "vocabulary)"},
      {"shard_scope",
       std::string("all"),
       "which operators get strategies: all, or weight_matmuls (the rest for sharding_propagation to fill)",
       0,
       0,
       {"all", "weight_matmuls"}},
      {"activation",
       std::string("gelu"),
       "MLP: gelu, fast_gelu, relu (two matrices), or gated swiglu, geglu (gate, up and down matrices)",
       0,
       0,
       {"gelu", "fast_gelu", "relu", "swiglu", "geglu"}},
      {"norm",
       std::string("layer_norm"),
       "layer_norm (gamma and beta) or rms_norm (gamma)",
       0,
       0,
       {"layer_norm", "rms_norm"}},
      {"position_embedding",
       std::string("learned"),
       "learned (a position table), rope (rotary, on queries and keys), or none",
       0,
       0,
       {"learned", "rope", "none"}},
      {"linear_bias",
       std::string("all"),
       "biases of the linear layers: all, qkv (query/key/value only), none",
       0,
       0,
       {"all", "qkv", "none"}},
      {"tie_word_embeddings", true, "the LM head reuses the input embedding table (false: its own weight)"},
      {"attention",
       std::string("eager"),
       "eager (scores, mask, softmax, dropout and context as operators) or flash (one FlashAttentionScore)",
       0,
       0,
       {"eager", "flash"}},
      {"dropout", true, "dropout on embeddings, attention probabilities and residual branches (keep_prob 0.9)"},
      {"loss",
       std::string("onehot"),
       "onehot (SoftmaxCrossEntropyWithLogits against one-hot labels, classes whole) or vocab_parallel "
       "(CrossEntropyLoss on label indices, classes split like the LM head)",
       0,
       0,
       {"onehot", "vocab_parallel"}},
      {"use_seq_parallel", false,
       "sequence parallel (Megatron-SP, MindFormers use_seq_parallel): norms, dropout and residuals split their "
       "tokens over model_parallel too; AllGather before and ReduceScatter after each tensor-parallel block"},
      {"qkv_concat", false, "one column-parallel MatMul for query, key and value, then split (MindFormers qkv_concat)"},
      {"ffn_concat", false, "one column-parallel MatMul for a gated MLP's gate and up projections, then split"},
      {"parallel_residual", false, "attention and MLP both read the layer input and add to it (GPT-NeoX)"},
      {"offset", std::vector<int64_t>{},
       "MindFormers offset: pipeline stage i holds layers / pipeline_stages + offset[i] layers (one entry per stage, "
       "adding up to layers % pipeline_stages); empty: spread evenly",
       -4096, 4096},
      {"fp8",
       std::string("off"),
       "FP8 GEMMs in the linear layers of attention and MLP (Transformer Engine; the embedding, attention core and "
       "LM head stay in dtype): off, e4m3, or hybrid (E4M3 forward, E5M2 gradients)",
       0,
       0,
       {"off", "e4m3", "hybrid"}},
      {"kv_lora_rank", int64_t{0},
       "multi-head latent attention (DeepSeek-V2/V3): keys and values projected up from a latent of this size, "
       "with a shared rotary key of rope_head_dim; head_dim is then the non-rotary query/key part (0: standard "
       "attention)",
       0, 1 << 16},
      {"q_lora_rank", int64_t{0}, "latent attention: queries projected up from a latent of this size too (0: directly)",
       0, 1 << 16},
      {"rope_head_dim", int64_t{0}, "latent attention: the rotary part of each query and key head", 0, 4096},
      {"v_head_dim", int64_t{0}, "latent attention: the value head size (0: head_dim)", 0, 1 << 16},
      {"experts", int64_t{0},
       "routed experts of each mixture-of-experts layer (Mixtral num_local_experts, DeepSeek n_routed_experts); 0: "
       "dense MLPs only",
       0, 4096},
      {"experts_per_token", int64_t{2}, "experts each token is routed to (top-k)", 1, 4096},
      {"moe_ffn_hidden", int64_t{0}, "inner size of one expert's MLP (0: ffn_hidden)", 0, 1 << 22},
      {"shared_experts", int64_t{0}, "experts every token passes through besides its routed ones (DeepSeek)", 0, 64},
      {"first_dense_layers", int64_t{0},
       "leading layers with a dense MLP instead of experts (DeepSeek first_k_dense_replace)", 0, 4096},
      {"capacity_factor", 1.0,
       "expert capacity as a multiple of a balanced share (tokens x experts_per_token / experts); 1: dropless on "
       "average",
       0, 64},
      {"expert_parallel", int64_t{1},
       "MindFormers expert_parallel: the experts split over this many of the data-parallel (x context-parallel) "
       "devices, tokens exchanged by AlltoAll",
       1, 4096},
      {"expert_tensor_parallel", int64_t{0},
       "Megatron --expert-tensor-parallel-size: the experts' inner size split over this many devices (0: "
       "model_parallel); below model_parallel, expert_parallel may take tensor-parallel devices too (MoE parallel "
       "folding: expert layers lay data_parallel x context_parallel x model_parallel out as expert data parallel x "
       "expert_parallel x expert_tensor_parallel)",
       0, 4096},
      {"router_aux_loss", true, "compute the router's load-balancing loss (Switch Transformer) in every MoE layer"},
      {"router_scoring",
       std::string("softmax"),
       "how the router scores experts: softmax, or sigmoid (DeepSeek-V3)",
       0,
       0,
       {"softmax", "sigmoid"}},
      {"router_expert_bias", false,
       "a per-expert bias added to the scores for the selection (DeepSeek-V3's auxiliary-loss-free balancing; not "
       "trained by gradients)"},
      {"moe_fp8_dispatch", false,
       "the tokens' exchange toward their experts carries them in FP8, E4M3 with a float32 scale per 128 elements "
       "(DeepSeek-V3's low-precision dispatch; the combine's exchange and the backward's stay in the model's dtype)"},
      {"moe_router_num_groups", int64_t{1},
       "group-limited routing (DeepSeek's n_group, Megatron's --moe-router-num-groups): the experts in this many "
       "equal groups, laid over the expert-parallel devices in order; 1: no groups",
       1, 4096},
      {"moe_router_group_topk", int64_t{1},
       "group-limited routing (DeepSeek's topk_group, Megatron's --moe-router-group-topk): each token's experts "
       "within this many groups (DeepSeek-V3: 4 of 8, one per server, so a token reaches at most 4 servers)",
       1, 4096},
      {"moe_token_dispatcher",
       std::string("alltoall"),
       "how tokens reach their experts (Megatron's --moe-token-dispatcher-type): alltoall, every (token, expert) "
       "copy sent to its expert's device; flex, DeepEP's or HybridEP's, a token crossing once to each server "
       "that holds its experts (fewer servers under group-limited routing) and forwarded inside it, the combine "
       "summed in the server before it crosses back",
       0,
       0,
       {"alltoall", "flex"}},
      {"lora_rank", int64_t{0},
       "LoRA fine-tuning (Hu et al. 2021; NeMo's adapter_dim): the base model frozen (no gradients, no optimizer "
       "states), trainable adapters A [lora_rank, in] and B [out, lora_rank] beside the linear layers lora_targets "
       "names (0: every weight trained)",
       0, 65536},
      {"lora_targets",
       std::string("attention_qkv"),
       "linear layers that get LoRA adapters (NeMo's target_modules): attention_qkv, attention (qkv and the "
       "output projection), mlp (both MLP layers), all",
       0,
       0,
       {"attention_qkv", "attention", "mlp", "all"}},
      {"dtype",
       std::string("float16"),
       "compute dtype of weights and activations",
       0,
       0,
       {"float16", "bfloat16", "float32"}},
  };
}

// Marks a linear layer's GEMM output with the model's fp8_format, when it has one.
// Packed documents: the attention's keys per query are its document's.
void MarkDocuments(GraphBuilder& b, const Dims& d, int context) {
  if (d.document_length > 0) b.SetProducerAttr(context, "document_length", d.document_length);
}

void MarkFp8(GraphBuilder& b, const Dims& d, int y) {
  if (d.fp8 != "off") b.SetProducerAttr(y, "fp8_format", d.fp8);
}

// Whether the linear layer `name` gets a LoRA adapter: NeMo's target modules
// by the builder's layer names.
bool LoraTargets(const Dims& d, const std::string& name) {
  if (d.lora_rank == 0) return false;
  auto ends = [&](const char* suffix) {
    const std::string s = suffix;
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  const bool qkv = ends("attention/qkv") || ends("attention/query") || ends("attention/key") ||
                   ends("attention/value") || ends("attention/q_down") || ends("attention/q_up") ||
                   ends("attention/kv_down") || ends("attention/kv_up");  // latent attention's
  const bool dense = ends("attention/projection");
  // The MLPs: dense, the shared experts' and the routed experts' (each expert its own adapter).
  const bool mlp = name.find("ffn/") != std::string::npos || name.find("moe/shared_experts/") != std::string::npos ||
                   name.find("moe/experts.") != std::string::npos;
  const bool fc2 = mlp && (ends("/projection") || ends(".projection"));
  const bool fc1 = mlp && !fc2;
  const std::string& t = d.lora_targets;
  return (qkv && t != "mlp") || (dense && (t == "attention" || t == "all")) ||
         ((fc1 || fc2) && (t == "mlp" || t == "all"));
}

// LoRA's adapter beside a frozen linear layer y = x·Wᵀ: y + (x·Aᵀ)·Bᵀ with
// A [rank, in] and B [out, rank] trainable, in the model's dtype (not FP8).
// Beside a column-parallel layer A is whole and B split like W, the narrow
// [tokens, rank] product gathered over model_parallel (under sequence
// parallelism its input stays split by tokens); beside a row-parallel one A
// is split like W and the narrow product AllReduced (reduce-scattered over
// the tokens under sequence parallelism, as the layer itself), B whole.
int LoraAdapter(GraphBuilder& b, const Dims& d, const std::string& name, int x, int y, int64_t out_dim, bool column) {
  const Shard shard{d.sharded && d.all_ops};
  const Shard weights{d.sharded};
  const int64_t dp = d.token_split(), mp = d.mp, rank = d.lora_rank;
  b.set_frozen(false);
  const int a = b.Parameter(name + ".lora_a", {rank, b.shape(x).back()}, d.dtype);
  const int bw = b.Parameter(name + ".lora_b", {out_dim, rank}, d.dtype);
  b.set_frozen(true);
  if (column) {
    const int down = b.MatMul(name + ".lora_down", x, a, false, true, weights({{d.rows(), 1}, {1, 1}}));
    const int up = b.MatMul(name + ".lora_up", down, bw, false, true, weights({{dp, 1}, {mp, 1}}));
    return b.Binary("Add", name + ".lora_add", y, up, shard({{dp, mp}, {dp, mp}}));
  }
  const int down = b.MatMul(name + ".lora_down", x, a, false, true, weights({{dp, mp}, {1, mp}}), d.seq_parallel);
  const int up = b.MatMul(name + ".lora_up", down, bw, false, true, weights({{d.rows(), 1}, {1, 1}}));
  return b.Binary("Add", name + ".lora_add", y, up, shard({{d.rows(), 1}, {d.rows(), 1}}));
}

// LoRA beside a layer replicated over model_parallel (latent attention's
// down projections): A and B whole on every device, no communication.
int ReplicatedLoraAdapter(GraphBuilder& b, const Dims& d, const std::string& name, int x, int y, int64_t out_dim) {
  const Shard shard{d.sharded && d.all_ops};
  const Shard weights{d.sharded};
  b.set_frozen(false);
  const int a = b.Parameter(name + ".lora_a", {d.lora_rank, b.shape(x).back()}, d.dtype);
  const int bw = b.Parameter(name + ".lora_b", {out_dim, d.lora_rank}, d.dtype);
  b.set_frozen(true);
  const int down = b.MatMul(name + ".lora_down", x, a, false, true, weights({{d.rows(), 1}, {1, 1}}));
  const int up = b.MatMul(name + ".lora_up", down, bw, false, true, weights({{d.rows(), 1}, {1, 1}}));
  return b.Binary("Add", name + ".lora_add", y, up, shard({{d.rows(), 1}, {d.rows(), 1}}));
}

// LoRA beside the experts' batched GEMM x [groups, experts, capacity, in]:
// each expert its own adapters A [experts, rank, in] and B [experts, out,
// rank], split over expert_parallel like the experts. Beside the
// column-parallel up projection A is whole and B split over
// expert_tensor_parallel; beside the row-parallel down projection A is split
// like the weight (the narrow partial sums reduced) and B whole. A reads the
// expert GEMM's own input: the tokens come to their experts once for both
// (the op is marked so that lowering adds no second exchange).
int ExpertLoraAdapter(GraphBuilder& b, const Dims& d, const std::string& name, int x, int y, int64_t out_dim,
                      bool column) {
  const Shard shard{d.sharded && d.all_ops};
  const Shard weights{d.sharded};
  const int64_t g = d.expert_groups(), ep = d.ep, etp = d.etp;
  b.set_frozen(false);
  const int a = b.Parameter(name + ".lora_a", {d.experts, d.lora_rank, b.shape(x).back()}, d.dtype);
  const int bw = b.Parameter(name + ".lora_b", {d.experts, out_dim, d.lora_rank}, d.dtype);
  b.set_frozen(true);
  if (column) {
    const int down = b.BatchMatMul(name + ".lora_down", x, a, false, true, weights({{g, ep, 1, 1}, {ep, 1, 1}}));
    b.SetProducerAttr(down, "shares_expert_input", true);
    const int up = b.BatchMatMul(name + ".lora_up", down, bw, false, true, weights({{g, ep, 1, 1}, {ep, etp, 1}}));
    return b.Binary("Add", name + ".lora_add", y, up, shard({{g, ep, 1, etp}, {g, ep, 1, etp}}));
  }
  const int down = b.BatchMatMul(name + ".lora_down", x, a, false, true, weights({{g, ep, 1, etp}, {ep, 1, etp}}));
  b.SetProducerAttr(down, "shares_expert_input", true);
  const int up = b.BatchMatMul(name + ".lora_up", down, bw, false, true, weights({{g, ep, 1, 1}, {ep, 1, 1}}));
  return b.Binary("Add", name + ".lora_add", y, up, shard({{g, ep, 1, 1}, {g, ep, 1, 1}}));
}

// A Dense layer on x [tokens, in]: weight [out, in], split over model_parallel
// by rows (column-parallel, output split) or by columns (row-parallel, the
// partial sums AllReduced), with its bias when it has one.
int Linear(GraphBuilder& b, const Dims& d, const std::string& name, int x, int64_t out_dim, bool column, bool bias) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t dp = d.token_split(), mp = d.mp;
  const int64_t in_dim = b.shape(x).back();
  const int w = b.Parameter(name + ".weight", {out_dim, in_dim}, d.dtype);
  const int beta = bias ? b.Parameter(name + ".bias", {out_dim}, d.dtype) : -1;
  const Strategy s = column ? Strategy{{dp, 1}, {mp, 1}} : Strategy{{dp, mp}, {1, mp}};
  int y = b.MatMul(name, x, w, false, true, Shard{d.sharded}(s), !column && d.seq_parallel);
  MarkFp8(b, d, y);
  if (LoraTargets(d, name)) y = LoraAdapter(b, d, name, x, y, out_dim, column);
  if (!bias) return y;
  return b.BiasAdd(name + ".bias_add", y, beta, column ? shard({{dp, mp}, {mp}}) : shard({{d.rows(), 1}, {1}}));
}

// A Dense layer whose weight every model_parallel device holds whole (the
// latent attention's down projections), on x [tokens, in] split as the
// activations between blocks are (over model_parallel too under sequence
// parallelism, so the narrow latent is gathered, not the input).
int ReplicatedLinear(GraphBuilder& b, const Dims& d, const std::string& name, int x, int64_t out_dim) {
  const int w = b.Parameter(name + ".weight", {out_dim, b.shape(x).back()}, d.dtype);
  const int y = b.MatMul(name, x, w, false, true, Shard{d.sharded}({{d.rows(), 1}, {1, 1}}));
  MarkFp8(b, d, y);
  if (LoraTargets(d, name)) return ReplicatedLoraAdapter(b, d, name, x, y, out_dim);
  return y;
}

// Marks the operators added during its lifetime for recomputation when `on`
// (a recompute module), and puts the mark back as it was after.
// With `outputs_recomputed`, what those operators produce is recomputed for
// the operators after them too (their attr "outputs_recomputed"), not kept.
class RecomputeWhile {
 public:
  RecomputeWhile(GraphBuilder& b, bool on, bool outputs_recomputed = false)
      : b_(b),
        on_(on),
        outputs_recomputed_(outputs_recomputed),
        was_(b.recompute()),
        first_(b.graph().operators().size()) {
    if (on) b_.set_recompute(true);
  }
  ~RecomputeWhile() {
    b_.set_recompute(was_);
    if (!on_ || !outputs_recomputed_) return;
    for (size_t i = first_; i < b_.graph().operators().size(); ++i)
      for (int t : b_.graph().op(static_cast<int>(i)).outputs) b_.SetProducerAttr(t, "outputs_recomputed", true);
  }
  RecomputeWhile(const RecomputeWhile&) = delete;
  RecomputeWhile& operator=(const RecomputeWhile&) = delete;

 private:
  GraphBuilder& b_;
  bool on_, outputs_recomputed_, was_;
  size_t first_;
};

// RMSNorm of a latent [tokens, size] split `rows` ways.
int LatentNorm(GraphBuilder& b, const Dims& d, const std::string& name, int x, int64_t rows) {
  const int gamma = b.Parameter(name + ".gamma", {b.shape(x).back()}, DType::kFloat32);
  return b.RmsNorm(name, x, gamma, Shard{d.sharded && d.all_ops}({{rows, 1}, {1}}));
}

// Multi-head latent attention (DeepSeek-V2/V3) on x [tokens, hidden]: queries
// from a latent (or directly), keys and values from a shared latent, each
// head's key the non-rotary part of its own and a rotary part shared by all
// heads, values of v_head_dim. The down projections are replicated over
// model_parallel, the up projections split heads like column-parallel layers.
// Under context parallel the heads stay [batch, seq, heads, head_dim] (BSND)
// with the queries split by sequence and the up-projected keys and values
// gathered over the group, as for standard attention.
int LatentAttention(GraphBuilder& b, const Dims& d, int x) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t dp = d.dp, cp = d.cp, mp = d.mp, qk_dim = d.head_dim + d.rope_dim;
  const Strategy heads4 = {{dp, cp, mp, 1}};
  int q = x;
  if (d.q_lora > 0)
    q = LatentNorm(b, d, "attention/q_norm", ReplicatedLinear(b, d, "attention/q_down", x, d.q_lora), d.rows());
  // mla_up_proj: the up-projections through the attention's inputs are
  // recomputed before the attention's backward, and those inputs not kept
  // (Megatron's CheckpointWithoutOutput): two runs, the queries' up-projection, then the keys' and values'
  // and the three tensors' move to [batch, heads, seq, dim].
  const bool up_recomputed = d.Recomputes(RecomputeModule::kMlaUpProjection);
  {
    RecomputeWhile up(b, up_recomputed, /*outputs_recomputed=*/true);
    q = Linear(b, d, "attention/q_up", q, d.heads * qk_dim, true, false);
    q = b.Reshape("attention/query_split", q, {d.batch, d.seq, d.heads, qk_dim});
    const auto q_parts = b.SplitV("attention/query_rope_split", q, 3, {d.head_dim, d.rope_dim}, shard(heads4));
    const int q_rope = b.RotaryPositionEmbedding("attention/query_rotary", q_parts[1], shard(heads4));
    q = b.Concat("attention/query_join", {q_parts[0], q_rope}, 3, shard({heads4[0], heads4[0]}));
  }

  const int kv = ReplicatedLinear(b, d, "attention/kv_down", x, d.kv_lora + d.rope_dim);
  const auto kv_parts =
      b.SplitV("attention/kv_latent_split", kv, 1, {d.kv_lora, d.rope_dim}, shard({{d.token_split(), 1}}));
  const int latent = LatentNorm(b, d, "attention/kv_norm", kv_parts[0], d.token_split());
  const std::vector<int64_t> bnsd = {dp, mp, 1, 1};
  int k = -1, v = -1;
  {
    RecomputeWhile up(b, up_recomputed, /*outputs_recomputed=*/true);
    int kv_heads = Linear(b, d, "attention/kv_up", latent, d.heads * (d.head_dim + d.v_dim), true, false);
    kv_heads = b.Reshape("attention/kv_split", kv_heads, {d.batch, d.seq, d.heads, d.head_dim + d.v_dim});
    const auto k_v = b.SplitV("attention/key_value_split", kv_heads, 3, {d.head_dim, d.v_dim}, shard(heads4));
    int k_rope = b.Reshape("attention/key_rope_heads", kv_parts[1], {d.batch, d.seq, 1, d.rope_dim});
    k_rope = b.RotaryPositionEmbedding("attention/key_rotary", k_rope, shard({{dp, cp, 1, 1}}));
    k_rope = b.BroadcastTo("attention/key_rope_shared", k_rope, {d.batch, d.seq, d.heads, d.rope_dim},
                           shard({{dp, cp, 1, 1}}));
    k = b.Concat("attention/key_join", {k_v[0], k_rope}, 3, shard({heads4[0], heads4[0]}));
    v = k_v[1];
    if (cp == 1) {
      auto to_bnsd = [&](const std::string& name, int t) {
        return b.Transpose("attention/" + name + "_heads", t, {0, 2, 1, 3}, shard(heads4));
      };
      q = to_bnsd("query", q);
      k = to_bnsd("key", k);
      v = to_bnsd("value", v);
    }
  }
  if (cp > 1) {
    const std::vector<int64_t> q_split = {dp, cp, mp, 1}, kv_split = {dp, 1, mp, 1};
    const int context =
        b.FlashAttention("attention/flash", q, k, v, true, shard(Strategy{q_split, kv_split, kv_split}), "BSND");
    if (d.ring_attention) b.SetProducerAttr(context, "enable_ring_attention", true);
    MarkDocuments(b, d, context);
    return Linear(b, d, "attention/projection", b.Reshape("attention/merge", context, {d.tokens(), d.heads * d.v_dim}),
                  d.hidden, false, d.bias_rest);
  }
  const int context = b.FlashAttention("attention/flash", q, k, v, true, shard(Strategy{bnsd, bnsd, bnsd}));
  MarkDocuments(b, d, context);
  const int merged = b.Transpose("attention/merge_heads", context, {0, 2, 1, 3}, shard({bnsd}));
  const int flat = b.Reshape("attention/merge", merged, {d.tokens(), d.heads * d.v_dim});
  return Linear(b, d, "attention/projection", flat, d.hidden, false, d.bias_rest);
}

// Ulysses (context_parallel_algo ulysses_cp, hybrid_cp): `t` [batch, seq,
// n heads, head_dim], its sequence split over cp and its heads over mp, comes
// out with the sequence split over the ring part of cp only and the heads over
// ulysses x mp. As MindFormers writes it: the heads grouped [mp, ulysses, rest]
// and the two group axes swapped in place (no communication), then a
// Transpose in place whose strategy moves the ulysses split from the sequence
// to the heads: an AlltoAll over the ulysses devices.
int UlyssesToHeads(GraphBuilder& b, const Dims& d, const std::string& name, int t, int64_t n) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t u = d.ulysses, ring = d.cp / u;
  t = b.Reshape("attention/" + name + "_head_groups", t, {d.batch, d.seq, d.mp, u, n / (d.mp * u), d.head_dim});
  t = b.Transpose("attention/" + name + "_ulysses_order", t, {0, 1, 3, 2, 4, 5}, shard({{d.dp, d.cp, d.mp, 1, 1, 1}}));
  t = b.Transpose("attention/" + name + "_ulysses_exchange", t, {0, 1, 2, 3, 4, 5},
                  shard({{d.dp, ring, u, d.mp, 1, 1}}));
  b.SetProducerAttr(t, "context_exchange", true);
  return b.Reshape("attention/" + name + "_ulysses_heads", t, {d.batch, d.seq, n, d.head_dim});
}

// The way back for attention's output [batch, seq, heads, head_dim]: the
// AlltoAll returns the heads' ulysses split to the sequence, then the group
// axes go back to [mp, ulysses, rest], the heads split over mp alone.
int UlyssesToSequence(GraphBuilder& b, const Dims& d, int t) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t u = d.ulysses;
  t = b.Reshape("attention/context_head_groups", t, {d.batch, d.seq, u, d.mp, d.heads / (d.mp * u), d.v_dim});
  t = b.Transpose("attention/context_ulysses_exchange", t, {0, 1, 2, 3, 4, 5}, shard({{d.dp, d.cp, 1, d.mp, 1, 1}}));
  b.SetProducerAttr(t, "context_exchange", true);
  return b.Transpose("attention/context_ulysses_order", t, {0, 1, 3, 2, 4, 5}, shard({{d.dp, d.cp, 1, d.mp, 1, 1}}));
}

// Grouped-query keys or values [batch, seq, kv_heads, head_dim] repeated over
// their groups of query heads, for a Ulysses exchange the key/value heads
// cannot be split for (MindFormers repeats them when kv_heads < ulysses x mp).
int RepeatKvHeads(GraphBuilder& b, const Dims& d, const std::string& name, int t) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t group = d.heads / d.kv_heads;
  t = b.Reshape("attention/" + name + "_groups", t, {d.batch, d.seq, d.kv_heads, 1, d.head_dim});
  t = b.BroadcastTo("attention/" + name + "_repeat", t, {d.batch, d.seq, d.kv_heads, group, d.head_dim},
                    shard({{d.dp, d.cp, d.mp, 1, 1}}));
  return b.Reshape("attention/" + name + "_repeated", t, {d.batch, d.seq, d.heads, d.head_dim});
}

// Sequence pipelining: the chunk's keys or values [batch, kv_heads, seq,
// head_dim] put at their place in a whole-length cache of the sequence's
// chunks so far, which the attention reads (MindFormers' seq_pipe: the chunk
// tiled over the sequence's length, masked by `chunk_mask` [1, 1, kv_seq, 1]
// to its place, added to the layer's cache). Each chunk's attention keeps
// its whole-length keys and values for its backward.
int SequenceChunkCache(GraphBuilder& b, const Dims& d, const std::string& name, int t, int chunk_mask) {
  const Shard shard{d.sharded && d.all_ops};
  const Shape s = b.shape(t);
  const Strategy heads = {{d.dp, d.mp, 1, 1}};
  t = b.Reshape("attention/" + name + "_chunk", t, {s[0], s[1], 1, s[2] * s[3]});
  t = b.BroadcastTo("attention/" + name + "_tile", t, {s[0], s[1], d.seq_chunks, s[2] * s[3]}, shard(heads));
  t = b.Reshape("attention/" + name + "_whole", t, {s[0], s[1], d.kv_seq(), s[3]});
  t = b.Binary("Mul", "attention/" + name + "_place", t, chunk_mask, shard({{d.dp, d.mp, 1, 1}, {1, 1, 1, 1}}));
  const int cache = b.Parameter("attention/" + name + "_cache", {s[0], s[1], d.kv_seq(), s[3]}, d.dtype, false);
  return b.Binary("Add", "attention/" + name + "_cached", t, cache, shard({{d.dp, d.mp, 1, 1}, {d.dp, d.mp, 1, 1}}));
}

// The same under context parallel, the chunk's keys or values [batch, seq,
// kv_heads, head_dim] split by sequence over cp: the cache stays split so
// too and the attention gathers it whole for every chunk (MindFormers'
// GLM2 SeqPipeProcess, its cache sharded (dp, cp, mp); `chunk_mask` is
// [1, kv_seq, 1, 1]). The tile lays the chunk's positions outermost, so
// that each device's slice of the chunk tiles its slice of the cache.
int SequenceChunkCacheBsnd(GraphBuilder& b, const Dims& d, const std::string& name, int t, int chunk_mask) {
  const Shard shard{d.sharded && d.all_ops};
  const Shape s = b.shape(t);
  const Strategy split = {{d.dp, d.cp, d.mp, 1}};
  t = b.Reshape("attention/" + name + "_chunk", t, {s[0], s[1], 1, s[2] * s[3]});
  t = b.BroadcastTo("attention/" + name + "_tile", t, {s[0], s[1], d.seq_chunks, s[2] * s[3]},
                    shard({{d.dp, d.cp, 1, d.mp}}));
  t = b.Reshape("attention/" + name + "_whole", t, {s[0], d.kv_seq(), s[2], s[3]});
  t = b.Binary("Mul", "attention/" + name + "_place", t, chunk_mask, shard({split[0], {1, d.cp, 1, 1}}));
  const int cache = b.Parameter("attention/" + name + "_cache", {s[0], d.kv_seq(), s[2], s[3]}, d.dtype, false);
  return b.Binary("Add", "attention/" + name + "_cached", t, cache, shard({split[0], split[0]}));
}

// Self-attention on x [tokens, hidden]; returns the projected output.
// `causal` masks future positions (decoders); the eager form adds `mask`.
// Under context parallel the heads stay [batch, seq, heads, head_dim]
// (FlashAttentionScore's BSND, no transposes): the queries split by sequence
// over cp, the keys and values gathered over it.
int Attention(GraphBuilder& b, const Dims& d, int x, int mask, bool causal) {
  if (d.kv_lora > 0) return LatentAttention(b, d, x);
  const Shard shard{d.sharded && d.all_ops};
  const int64_t dp = d.dp, mp = d.mp, cp = d.cp;
  const bool bsnd = cp > 1;
  int q, k, v;
  if (d.qkv_concat) {
    // Grouped by key/value head, as Megatron lays its fused weight out: each
    // group's query heads, then its key and its value, so a model_parallel
    // slice holds whole groups and the split needs no communication.
    const int64_t group = d.heads / d.kv_heads;
    const int qkv = Linear(b, d, "attention/qkv", x, d.q_width() + 2 * d.kv_width(), true, d.bias_qkv);
    const int grouped = b.Reshape("attention/qkv_groups", qkv, {d.tokens(), d.kv_heads, (group + 2) * d.head_dim});
    const auto parts = b.SplitV("attention/qkv_split", grouped, 2, {group * d.head_dim, d.head_dim, d.head_dim},
                                shard({{d.token_split(), mp, 1}}));
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    q = Linear(b, d, "attention/query", x, d.q_width(), true, d.bias_qkv);
    k = Linear(b, d, "attention/key", x, d.kv_width(), true, d.bias_qkv);
    v = Linear(b, d, "attention/value", x, d.kv_width(), true, d.bias_qkv);
  }
  const Strategy heads4 = {{dp, cp, mp, 1}};
  // [tokens, heads*head_dim] -> [batch, seq, heads, head_dim], rotated by
  // position for RoPE (queries and keys), then transposed to `perm` (BNSD).
  auto heads = [&](const std::string& name, int t, int64_t count, std::vector<int64_t> perm, bool rotate) {
    t = b.Reshape("attention/" + name + "_split", t, {d.batch, d.seq, count, d.head_dim});
    if (rotate && d.position == "rope")
      t = b.RotaryPositionEmbedding("attention/" + name + "_rotary", t, shard(heads4));
    if (bsnd) return t;
    return b.Transpose("attention/" + name + "_heads", t, std::move(perm), shard(heads4));
  };
  // Eager attention multiplies by the keys transposed: [batch, heads, head_dim, seq].
  const std::vector<int64_t> key_perm = d.flash ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{0, 2, 3, 1};
  int qh = heads("query", q, d.heads, {0, 2, 1, 3}, true);
  int kh = heads("key", k, d.kv_heads, key_perm, true);
  int vh = heads("value", v, d.kv_heads, {0, 2, 1, 3}, false);
  if (!d.flash && d.kv_heads < d.heads) {
    // Eager grouped-query attention repeats each key and value head over its
    // group of query heads (MindFormers' _repeat_kv: Reshape, Tile,
    // Reshape), so the products see as many heads as the queries.
    const int64_t group = d.heads / d.kv_heads;
    auto repeat = [&](const std::string& name, int t) {
      const Shape s = b.shape(t);  // [batch, kv_heads, a, c]
      t = b.Reshape("attention/" + name + "_groups", t, {s[0], s[1], 1, s[2] * s[3]});
      t = b.BroadcastTo("attention/" + name + "_repeat", t, {s[0], s[1], group, s[2] * s[3]},
                        shard({{dp, mp, 1, 1}}));
      return b.Reshape("attention/" + name + "_repeated", t, {s[0], d.heads, s[2], s[3]});
    };
    kh = repeat("key", kh);
    vh = repeat("value", vh);
  }
  int context;
  if (bsnd) {
    // The queries split by sequence over the ring part of cp, the heads over
    // the Ulysses part and mp; the keys and values gathered over the ring part.
    const int64_t u = d.ulysses;
    int64_t kv_heads = d.kv_heads;
    if (u > 1) {
      if (kv_heads % (u * mp) != 0) {
        kh = RepeatKvHeads(b, d, "key", kh);
        vh = RepeatKvHeads(b, d, "value", vh);
        kv_heads = d.heads;
      }
      qh = UlyssesToHeads(b, d, "query", qh, d.heads);
      kh = UlyssesToHeads(b, d, "key", kh, kv_heads);
      vh = UlyssesToHeads(b, d, "value", vh, kv_heads);
    }
    if (d.seq_chunks > 1) {
      kh = SequenceChunkCacheBsnd(b, d, "key", kh, mask);
      vh = SequenceChunkCacheBsnd(b, d, "value", vh, mask);
    }
    const std::vector<int64_t> q = {dp, cp / u, u * mp, 1}, kv = {dp, 1, u * mp, 1};
    context = b.FlashAttention("attention/flash", qh, kh, vh, causal, shard(Strategy{q, kv, kv}), "BSND");
    if (d.ring_attention) b.SetProducerAttr(context, "enable_ring_attention", true);
    MarkDocuments(b, d, context);
    if (u > 1) context = UlyssesToSequence(b, d, context);
    return Linear(b, d, "attention/projection", b.Reshape("attention/merge", context, {d.tokens(), d.q_width()}),
                  d.hidden, false, d.bias_rest);
  }
  if (d.flash) {
    const std::vector<int64_t> bnsd = {dp, mp, 1, 1};
    if (d.seq_chunks > 1) {
      kh = SequenceChunkCache(b, d, "key", kh, mask);
      vh = SequenceChunkCache(b, d, "value", vh, mask);
    }
    context = b.FlashAttention("attention/flash", qh, kh, vh, causal, shard(Strategy{bnsd, bnsd, bnsd}));
    MarkDocuments(b, d, context);
  } else {
    const Strategy per_head = {{dp, mp, 1, 1}, {dp, mp, 1, 1}};
    if (d.select_recompute) b.set_recompute(true);
    int scores = b.BatchMatMul("attention/scores", qh, kh, false, false, shard(per_head));
    scores = b.Binary("Add", "attention/mask_add", scores, mask, shard({{dp, mp, 1, 1}, {dp, 1, 1, 1}}));
    int probs = b.Softmax("attention/softmax", scores, -1, shard({{dp, mp, 1, 1}}));
    if (d.dropout) probs = b.Dropout("attention/probs_dropout", probs, kKeepProb, shard({{dp, mp, 1, 1}}));
    context = b.BatchMatMul("attention/context", probs, vh, false, false, shard(per_head));
    if (d.select_recompute) b.set_recompute(false);
  }
  const int merged = b.Transpose("attention/merge_heads", context, {0, 2, 1, 3}, shard({{dp, mp, 1, 1}}));
  const int flat = b.Reshape("attention/merge", merged, {d.tokens(), d.q_width()});
  return Linear(b, d, "attention/projection", flat, d.hidden, false, d.bias_rest);
}

std::string ActivationName(const Dims& d) {
  std::string name = d.activation;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// Position-wise MLP of inner size `ffn` under `scope`: column-parallel mapping
// (gate and up when gated), the activation (of the gate, times up, when
// gated), row-parallel projection.
int FeedForward(GraphBuilder& b, const Dims& d, int x, const std::string& scope, int64_t ffn) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t dp = d.token_split(), mp = d.mp;
  const std::string act_name = ActivationName(d);
  if (!d.gated) {
    const int y = Linear(b, d, scope + "/mapping", x, ffn, true, d.bias_rest);
    return Linear(b, d, scope + "/projection", b.Activation(d.activation, scope + "/" + act_name, y, shard({{dp, mp}})),
                  d.hidden, false, d.bias_rest);
  }
  int gate, up;
  if (d.ffn_concat) {
    // One [2 x ffn, hidden] weight whose model_parallel slices each hold their gate and up rows.
    const int both = Linear(b, d, scope + "/gate_up", x, 2 * ffn, true, d.bias_rest);
    const int pairs = b.Reshape(scope + "/gate_up_pairs", both, {d.tokens(), ffn, 2});
    const auto parts = b.SplitV(scope + "/gate_up_split", pairs, 2, {1, 1}, shard({{dp, mp, 1}}));
    gate = b.Reshape(scope + "/gate_flat", parts[0], {d.tokens(), ffn});
    up = b.Reshape(scope + "/up_flat", parts[1], {d.tokens(), ffn});
  } else {
    gate = Linear(b, d, scope + "/gate", x, ffn, true, d.bias_rest);
    up = Linear(b, d, scope + "/up", x, ffn, true, d.bias_rest);
  }
  int y = b.Activation(d.activation, scope + "/" + act_name, gate, shard({{dp, mp}}));
  y = b.Binary("Mul", scope + "/gated", y, up, shard({{dp, mp}, {dp, mp}}));
  return Linear(b, d, scope + "/projection", y, d.hidden, false, d.bias_rest);
}

// One batched GEMM of every expert: x [groups, experts, capacity, in] times
// the experts' weights [experts, out, in]. The experts split over
// expert_parallel, the inner size over expert_tensor_parallel (column-parallel
// up, row-parallel down), the groups over the rest of the stage's devices.
int ExpertLinear(GraphBuilder& b, const Dims& d, const std::string& name, int x, int64_t out_dim, bool column) {
  const int64_t in_dim = b.shape(x).back();
  const int w = b.Parameter(name + ".weight", {d.experts, out_dim, in_dim}, d.dtype);
  const int64_t g = d.expert_groups();
  const Strategy s =
      column ? Strategy{{g, d.ep, 1, 1}, {d.ep, d.etp, 1}} : Strategy{{g, d.ep, 1, d.etp}, {d.ep, 1, d.etp}};
  const int y = b.BatchMatMul(name, x, w, false, true, Shard{d.sharded}(s));
  MarkFp8(b, d, y);
  if (LoraTargets(d, name)) return ExpertLoraAdapter(b, d, name, x, y, out_dim, column);
  return y;
}

// Marks the producer of `y` (a dispatch or a combine) as exchanging tokens
// the flex way, with what the lowering needs to count the bytes that cross
// servers (FlexCrossingShare).
void MarkFlexDispatch(GraphBuilder& b, const Dims& d, int y) {
  if (!d.flex_dispatch) return;
  b.SetProducerAttr(y, "flex_dispatch", true);
  b.SetProducerAttr(y, "experts", d.experts);
  b.SetProducerAttr(y, "experts_per_token", d.experts_per_token);
  b.SetProducerAttr(y, "router_groups", d.router_groups);
  b.SetProducerAttr(y, "router_group_topk", d.router_group_topk);
  b.SetProducerAttr(y, "capacity_factor", d.capacity_factor);
}

// A mixture-of-experts MLP on x [tokens, hidden]: the router's top-k experts
// per token, the tokens dispatched to them (an AlltoAll over expert_parallel
// where the experts are split), each expert's MLP, the outputs combined back
// weighted by the router, plus the shared experts every token passes through.
// Tokens are routed in groups (a sample, or its context-parallel chunk, or
// under sequence parallelism a model_parallel share of that); each expert
// takes `capacity` tokens per group.
int MixtureOfExperts(GraphBuilder& b, const Dims& d, int x) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t rows = d.rows(), g = d.expert_groups(), k = d.experts_per_token;
  const int64_t groups = d.routed_groups(), tokens = d.tokens() / groups;
  // The rounding tolerates the factor's binary representation (1.1 x 1000 is 1100 slots).
  const int64_t capacity = std::max<int64_t>(
      1, static_cast<int64_t>(
             std::ceil(d.capacity_factor * static_cast<double>(tokens * k) / static_cast<double>(d.experts) - 1e-9)));
  const int router = b.Parameter("moe/router.weight", {d.experts, d.hidden}, d.dtype);
  const int logits = b.MatMul("moe/router", x, router, false, true, shard({{rows, 1}, {1, 1}}));
  const int probs = d.sigmoid_router ? b.Activation("Sigmoid", "moe/router_sigmoid", logits, shard({{rows, 1}}))
                                     : b.Softmax("moe/router_softmax", logits, -1, shard({{rows, 1}}));
  int scores = probs;
  if (d.expert_bias) {
    const int bias = b.Parameter("moe/router.expert_bias", {d.experts}, DType::kFloat32, false);
    scores = b.BiasAdd("moe/router_expert_bias", probs, bias, shard({{rows, 1}, {1}}));
  }
  // With the selection bias the combine weights are the unbiased scores of
  // the chosen experts: a gather of the same size, costed as the TopK's values.
  const auto [weights, ids] = b.TopK("moe/topk", scores, k, shard({{rows, 1}}));
  const int grouped_x = b.Reshape("moe/groups", x, {groups, tokens, d.hidden});
  const int grouped_ids = b.Reshape("moe/expert_ids", ids, {groups, tokens, k});
  const int grouped_weights = b.Reshape("moe/expert_weights", weights, {groups, tokens, k});
  int y =
      b.MoeDispatch("moe/dispatch", grouped_x, grouped_ids, d.experts, capacity, shard({{rows, 1, 1}, {rows, 1, 1}}));
  if (d.fp8_dispatch) b.SetProducerAttr(y, "fp8_dispatch", true);
  MarkFlexDispatch(b, d, y);
  const Strategy inner = {{g, d.ep, 1, d.etp}};
  const std::string act_name = ActivationName(d);
  if (d.gated) {
    int gate, up;
    if (d.ffn_concat) {
      // One weight for gate and up, as FeedForward's: the dispatched tokens go out once.
      const Shape shape = {groups, d.experts, capacity, d.moe_ffn};
      Shape pairs_shape = shape;
      pairs_shape.push_back(2);
      const int both = ExpertLinear(b, d, "moe/experts.gate_up", y, 2 * d.moe_ffn, true);
      const int pairs = b.Reshape("moe/experts.gate_up_pairs", both, pairs_shape);
      const auto parts = b.SplitV("moe/experts.gate_up_split", pairs, 4, {1, 1}, shard({{g, d.ep, 1, d.etp, 1}}));
      gate = b.Reshape("moe/experts.gate_flat", parts[0], shape);
      up = b.Reshape("moe/experts.up_flat", parts[1], shape);
    } else {
      gate = ExpertLinear(b, d, "moe/experts.gate", y, d.moe_ffn, true);
      up = ExpertLinear(b, d, "moe/experts.up", y, d.moe_ffn, true);
    }
    RecomputeWhile act(b, d.Recomputes(RecomputeModule::kMoeActivation), /*outputs_recomputed=*/true);
    y = b.Activation(d.activation, "moe/experts." + act_name, gate, shard(inner));
    y = b.Binary("Mul", "moe/experts.gated", y, up, shard({inner[0], inner[0]}));
  } else {
    y = ExpertLinear(b, d, "moe/experts.mapping", y, d.moe_ffn, true);
    RecomputeWhile act(b, d.Recomputes(RecomputeModule::kMoeActivation), /*outputs_recomputed=*/true);
    y = b.Activation(d.activation, "moe/experts." + act_name, y, shard(inner));
  }
  y = ExpertLinear(b, d, "moe/experts.projection", y, d.hidden, false);
  y = b.MoeCombine("moe/combine", y, grouped_ids, grouped_weights,
                   shard({{rows, 1, 1, 1}, {rows, 1, 1}, {rows, 1, 1}}));
  MarkFlexDispatch(b, d, y);
  y = b.Reshape("moe/ungroup", y, {d.tokens(), d.hidden});
  if (d.aux_loss) {
    // Switch Transformer's balance loss per group: the mean router
    // probability of each expert times the share of tokens routed to it. Its
    // gradient joins the router's in backward (Megatron's MoEAuxLossAutoScaler),
    // so nothing carries it to the loss across pipeline stages.
    const int mean_probs = b.Reduce("ReduceMean", "moe/aux_loss/mean_probs",
                                    b.Reshape("moe/aux_loss/probs", probs, {groups, tokens, d.experts}), {1}, false,
                                    shard({{rows, 1, 1}}));
    const int chosen =
        b.OneHot("moe/aux_loss/onehot", grouped_ids, d.experts, DType::kFloat32, shard({{rows, 1, 1, 1}}));
    const int load = b.Reduce("ReduceSum", "moe/aux_loss/load", chosen, {1, 2}, false, shard({{rows, 1, 1, 1}}));
    const int balance = b.Binary("Mul", "moe/aux_loss/balance", mean_probs, load, shard({{rows, 1}, {rows, 1}}));
    b.Reduce("ReduceSum", "moe/aux_loss/sum", balance, {1}, false, shard({{rows, 1}}));
  }
  if (d.shared_experts == 0) return y;
  int shared;
  {
    RecomputeWhile recompute(b, d.Recomputes(RecomputeModule::kSharedExperts));
    shared = FeedForward(b, d, x, "moe/shared_experts", d.shared_experts * d.moe_ffn);
  }
  return b.Binary("Add", "moe/add_shared", y, shared, shard({{rows, 1}, {rows, 1}}));
}

// The layer's MLP: experts from first_dense_layers on in a mixture-of-experts model.
int Mlp(GraphBuilder& b, const Dims& d, int x, int64_t layer) {
  if (d.experts > 0 && layer >= d.first_dense_layers) {
    RecomputeWhile recompute(b, d.Recomputes(RecomputeModule::kMoe));
    return MixtureOfExperts(b, d, x);
  }
  RecomputeWhile recompute(b, d.Recomputes(RecomputeModule::kMlp));
  return FeedForward(b, d, x, "ffn", d.ffn);
}

// The model's normalisation (LayerNorm or RMSNorm) over the hidden dimension.
int Norm(GraphBuilder& b, const Dims& d, const std::string& name, int x) {
  const Shard shard{d.sharded && d.all_ops};
  const int gamma = b.Parameter(name + ".gamma", {d.hidden}, DType::kFloat32);
  if (d.rms_norm) return b.RmsNorm(name, x, gamma, shard({{d.rows(), 1}, {1}}));
  const int beta = b.Parameter(name + ".beta", {d.hidden}, DType::kFloat32);
  return b.LayerNorm(name, x, gamma, beta, shard({{d.rows(), 1}, {1}, {1}}));
}

// A repeated layer's norm, recomputed under the layernorm recompute module
// (Megatron's CheckpointWithoutOutput: its output recomputed for its readers).
int LayerInputNorm(GraphBuilder& b, const Dims& d, const std::string& name, int x) {
  RecomputeWhile recompute(b, d.Recomputes(RecomputeModule::kLayerNorm), /*outputs_recomputed=*/true);
  return Norm(b, d, name, x);
}

int Residual(GraphBuilder& b, const Dims& d, const std::string& name, int x, int branch) {
  const Shard shard{d.sharded && d.all_ops};
  if (d.dropout) branch = b.Dropout(name + "_dropout", branch, kKeepProb, shard({{d.rows(), 1}}));
  return b.Binary("Add", name, x, branch, shard({{d.rows(), 1}, {d.rows(), 1}}));
}

// Gathers token (and learned position) embeddings; returns [tokens, hidden] and the table.
std::pair<int, int> Embeddings(GraphBuilder& b, const Dims& d, int input_ids, int position_ids) {
  const Shard shard{d.sharded && d.all_ops};
  const int table = b.Parameter("embedding/word.table", {d.vocab, d.hidden}, d.dtype);
  const bool learned = d.position == "learned";
  const int positions = learned ? b.Parameter("embedding/position.table", {d.max_positions, d.hidden}, d.dtype) : -1;
  int x = b.Gather("embedding/word", table, input_ids, 0, shard({{d.vocab_split(), 1}, {d.dp, d.cp}}));
  if (learned) {
    const int pos = b.Gather("embedding/position", positions, position_ids, 0, shard({{1, 1}, {d.dp, d.cp}}));
    x = b.Binary("Add", "embedding/add", x, pos, shard({{d.dp, d.cp, 1}, {d.dp, d.cp, 1}}));
  }
  x = b.Reshape("embedding/flatten", x, {d.tokens(), d.hidden});
  return {x, table};
}

// Token-level cross-entropy, averaged: against one-hot labels (classes
// whole), or vocabulary-parallel on label indices with the classes split
// `class_split` ways like the logits.
int LanguageModelLoss(GraphBuilder& b, const Dims& d, const std::string& name, int logits, int labels, int64_t classes,
                      int64_t class_split) {
  const Shard shard{d.sharded && d.all_ops};
  const int64_t tokens = d.token_split();
  int loss;
  if (d.vocab_parallel_loss) {
    loss = b.CrossEntropyLoss(name + "/cross_entropy", logits, labels, shard({{tokens, class_split}, {tokens}}));
  } else {
    const int onehot = b.OneHot(name + "/onehot", labels, classes, DType::kFloat32, shard({{tokens, 1}}));
    const int logits32 = b.Cast(name + "/cast", logits, DType::kFloat32, shard({{tokens, 1}}));
    loss = b.SoftmaxCrossEntropy(name + "/cross_entropy", logits32, onehot, shard({{tokens, 1}, {tokens, 1}}));
  }
  return b.Reduce("ReduceMean", name + "/mean", loss, {}, false, shard({{tokens}}));
}

// One decoder layer (number `layer`) on x [tokens, hidden]: attention and
// the MLP, each after its norm and added back (both reading x with a
// parallel residual).
int DecoderLayer(GraphBuilder& b, const Dims& d, int x, int mask, int64_t layer) {
  const int attention = Attention(b, d, LayerInputNorm(b, d, "attention_norm", x), mask, true);
  if (d.parallel_residual) {
    const int ffn = Mlp(b, d, LayerInputNorm(b, d, "ffn_norm", x), layer);
    return Residual(b, d, "ffn_residual", Residual(b, d, "attention_residual", x, attention), ffn);
  }
  x = Residual(b, d, "attention_residual", x, attention);
  return Residual(b, d, "ffn_residual", x, Mlp(b, d, LayerInputNorm(b, d, "ffn_norm", x), layer));
}

// The output head's logits of x [tokens, hidden] against `head` [vocab,
// hidden], split by vocabulary (Dims::vocab_split), and their loss against `labels`.
int HeadLoss(GraphBuilder& b, const Dims& d, int x, int head, int labels) {
  const int64_t vocab_split = d.vocab_split();
  // The vocabulary-parallel head is Megatron's: always placed, its logits
  // never gathered.
  const Shard head_shard{d.sharded && (d.all_ops || d.vocab_parallel_loss)};
  const int logits =
      b.MatMul("head/logits", x, head, false, true, head_shard({{d.token_split(), 1}, {vocab_split, 1}}));
  return LanguageModelLoss(b, d, "loss", logits, labels, d.vocab, vocab_split);
}

// DeepSeek-V3's multi-token prediction (arXiv:2412.19437 §2.2, Megatron's
// MultiTokenPredictionBlock): depth k predicts the token k + 1 ahead from
// depth k - 1's hidden states (the decoder's for the first) and the
// embedding of token i + k, each normed, joined and projected back to the
// hidden size (eh_proj, column-parallel, gathered), then one more decoder
// layer like the last, the final norm, the shared output head and a loss of
// its own. The shifted tokens are the batch's own, gathered from `table`;
// the next depth reads this one's normed output (Megatron's layer returns
// it). Under full recompute the norms, the projection, the layer and the
// final norm are recomputed (Megatron's _checkpointed_forward over
// _proj_and_transformer_layer, which ends with _postprocess); the embedding
// and the head are not.
void MultiTokenPrediction(GraphBuilder& b, const Dims& d, int hidden, int input_ids, int labels, int table, int head,
                          int mask, bool recompute) {
  const Shard shard{d.sharded && d.all_ops};
  for (int64_t k = 1; k <= d.mtp_layers; ++k) {
    b.set_scope("mtp" + std::to_string(k) + "/");
    int embedded = b.Gather("embedding", table, input_ids, 0, shard({{d.vocab_split(), 1}, {d.dp, d.cp}}));
    embedded = b.Reshape("embedding_flatten", embedded, {d.tokens(), d.hidden});
    b.set_recompute(recompute);
    const int joined = b.Concat("join", {Norm(b, d, "enorm", embedded), Norm(b, d, "hnorm", hidden)}, 1,
                                shard({{d.rows(), 1}, {d.rows(), 1}}));
    hidden = DecoderLayer(b, d, Linear(b, d, "eh_proj", joined, d.hidden, true, false), mask, d.layers + k - 1);
    hidden = Norm(b, d, "final_norm", hidden);
    b.set_recompute(false);
    HeadLoss(b, d, hidden, head, labels);
  }
  b.set_scope("");
}

Graph BuildGpt(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options) {
  Dims d = ReadDims(params);
  if (!options.recompute) d.recompute_modules = options.recompute_modules;
  d.select_recompute =
      (options.select_recompute || d.Recomputes(RecomputeModule::kCoreAttention)) && !options.recompute;
  const int64_t stages = options.pipeline_stages;
  const std::vector<int64_t> stage_of = StagesOfLayers(d.layers, stages, params.Ints("offset"));
  const std::vector<bool> offloaded = OffloadedLayers(stage_of, options.offload_layers);
  GraphBuilder b(graph_name);
  b.set_frozen(d.lora_rank > 0);
  const Shard shard{d.sharded && d.all_ops};
  const int input_ids = b.Input("input_ids", {d.batch, d.seq}, DType::kInt32);
  const int position_ids = d.position == "learned" ? b.Input("position_ids", {d.batch, d.seq}, DType::kInt32) : -1;
  // Eager attention's mask; under sequence pipelining, where each chunk's keys and values go in the cache.
  const int mask =
      !d.flash ? b.Input("attention_mask", {d.batch, 1, d.seq, d.seq}, d.dtype)
      : d.seq_chunks > 1
          ? b.Input("kv_chunk_mask", d.cp > 1 ? Shape{1, d.kv_seq(), 1, 1} : Shape{1, 1, d.kv_seq(), 1}, d.dtype)
          : -1;
  const int labels = b.Input("labels", {d.tokens()}, DType::kInt32);

  auto [x, table] = Embeddings(b, d, input_ids, position_ids);
  if (d.dropout) x = b.Dropout("embedding/dropout", x, kKeepProb, shard({{d.rows(), 1}}));
  for (int64_t layer = 0; layer < d.layers; ++layer) {
    b.set_stage(stage_of[layer]);
    b.set_scope("layer" + std::to_string(layer) + "/");
    b.set_recompute(options.recompute);
    b.set_offload(offloaded[layer]);
    x = DecoderLayer(b, d, x, mask, layer);
  }
  b.set_recompute(false);
  b.set_offload(false);
  b.set_scope("");
  const int64_t end_stage = options.head_on_first_stage ? 0 : stages - 1;
  b.set_stage(end_stage);
  const int decoded = x;
  x = Norm(b, d, "final_norm", x);
  // A tied LM head reuses the embedding table; on another pipeline stage it
  // holds its own copy, as MindSpore does for shared parameters.
  const bool own_head = !d.tied || end_stage > 0;
  const int head = own_head ? b.Parameter("head/word.table", {d.vocab, d.hidden}, d.dtype) : table;
  // Multi-token prediction continues from the decoder's hidden states, with
  // the embedding table there (a copy off the first stage, as Megatron keeps one).
  if (d.mtp_layers > 0)
    MultiTokenPrediction(b, d, decoded, input_ids, labels,
                         end_stage > 0 ? b.Parameter("mtp/word.table", {d.vocab, d.hidden}, d.dtype) : table, head,
                         mask, options.recompute);
  HeadLoss(b, d, x, head, labels);
  return b.Finish();
}

Graph BuildBert(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options) {
  Dims d = ReadDims(params);
  if (!options.recompute) d.recompute_modules = options.recompute_modules;
  d.select_recompute =
      (options.select_recompute || d.Recomputes(RecomputeModule::kCoreAttention)) && !options.recompute;
  const int64_t stages = options.pipeline_stages;
  const std::vector<int64_t> stage_of = StagesOfLayers(d.layers, stages, params.Ints("offset"));
  const std::vector<bool> offloaded = OffloadedLayers(stage_of, options.offload_layers);
  if (d.seq_parallel) throw GraphError("use_seq_parallel is built for the decoder (gpt), not BERT");
  if (d.cp > 1) throw GraphError("context_parallel is built for the decoder (gpt), not BERT");
  if (d.lora_rank > 0) throw GraphError("lora_rank is built for the decoder (gpt), not BERT");
  if (d.seq_chunks > 1) throw GraphError("seq_split_num pipelines a causal decoder's sequence chunks, not BERT's");
  if (d.mtp_layers > 0) throw GraphError("mtp_num_layers predicts a decoder's further tokens, not BERT's");
  const int64_t predictions = params.Int("max_predictions_per_seq");
  GraphBuilder b(graph_name);
  const Shard shard{d.sharded && d.all_ops};
  const int input_ids = b.Input("input_ids", {d.batch, d.seq}, DType::kInt32);
  const int position_ids = b.Input("position_ids", {d.batch, d.seq}, DType::kInt32);
  const int token_type_ids = b.Input("token_type_ids", {d.batch, d.seq}, DType::kInt32);
  const int mask = d.flash ? -1 : b.Input("attention_mask", {d.batch, 1, d.seq, d.seq}, d.dtype);
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
  x = Norm(b, d, "embedding/norm", x);
  if (d.dropout) x = b.Dropout("embedding/dropout", x, kKeepProb, shard({{d.rows(), 1}}));
  for (int64_t layer = 0; layer < d.layers; ++layer) {
    b.set_stage(stage_of[layer]);
    b.set_scope("layer" + std::to_string(layer) + "/");
    b.set_recompute(options.recompute);
    b.set_offload(offloaded[layer]);
    x = Norm(b, d, "attention_norm", Residual(b, d, "attention_residual", x, Attention(b, d, x, mask, false)));
    x = Norm(b, d, "ffn_norm", Residual(b, d, "ffn_residual", x, Mlp(b, d, x, layer)));
  }
  b.set_recompute(false);
  b.set_offload(false);
  b.set_scope("");
  const int64_t end_stage = options.head_on_first_stage ? 0 : stages - 1;
  b.set_stage(end_stage);
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
  const int nsp_loss = LanguageModelLoss(b, d, "nsp_loss", nsp_logits, nsp_labels, 2, 1);
  // Masked-LM head on the masked positions, decoding with the embedding table.
  const int picked = b.BatchLocalGather("mlm/gather", x, masked_positions, shard({{1, 1}, {d.dp}}));
  int t = b.Activation("GeLU", "mlm/gelu", dense("mlm/dense", picked, h, h), shard({{d.dp, 1}}));
  t = Norm(b, d, "mlm/norm", t);
  const int decoder = end_stage > 0 ? b.Parameter("mlm/word.table", {d.vocab, h}, d.dtype) : table;
  int logits = b.MatMul("mlm/decoder", t, decoder, false, true, shard({{d.dp, 1}, {1, 1}}));
  const int decoder_bias = b.Parameter("mlm/output.bias", {d.vocab}, d.dtype);
  logits = b.BiasAdd("mlm/output.bias_add", logits, decoder_bias, shard({{d.dp, 1}, {1}}));
  const int mlm_loss = LanguageModelLoss(b, d, "mlm_loss", logits, masked_labels, d.vocab, 1);
  b.Binary("Add", "total_loss", mlm_loss, nsp_loss);
  return b.Finish();
}

}  // namespace

ModelBuilder GptBuilder() {
  return {"gpt",
          "decoder-only transformer, MindFormers layout: GPT-2/3 by default; LLaMA, Mistral, Qwen2, GPT-NeoX "
          "through norm, position_embedding, activation, kv_heads, linear_bias, tie_word_embeddings, attention",
          TransformerParams(24, 1024, 16, 1024, 51200), &BuildGpt};
}

ModelBuilder BertBuilder() {
  auto params = TransformerParams(24, 1024, 16, 512, 30522);
  params.push_back({"max_predictions_per_seq", int64_t{80}, "masked tokens per sequence", 1, 1 << 16});
  return {"bert", "BERT encoder stack (post-LayerNorm) with masked-LM and next-sentence heads", params, &BuildBert};
}

}  // namespace shardlab
