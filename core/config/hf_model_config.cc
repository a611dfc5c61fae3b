#include "core/config/hf_model_config.h"

#include <filesystem>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/util/json_reader.h"
#include "core/util/quote.h"

namespace shardlab {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;

// Reads the keys one architecture uses; every other key of the file is the
// Hugging Face library's business and is left alone.
class HfReader {
 public:
  explicit HfReader(const JsonNode& node) : node_(node) {}

  bool Has(const std::string& key) const { return node_.json().contains(key) && !node_.json()[key].is_null(); }
  JsonNode Child(const std::string& key) const { return node_.Child(key); }
  int64_t Int(const std::string& key) const { return node_.Child(key).AsInt(1, kMaxDim); }
  int64_t Int(const std::string& key, int64_t fallback) const { return Has(key) ? Int(key) : fallback; }
  bool Bool(const std::string& key, bool fallback) const { return Has(key) ? node_.Child(key).AsBool() : fallback; }
  double Number(const std::string& key, double fallback) const {
    return Has(key) ? node_.Child(key).AsNumber(0, 1) : fallback;
  }
  std::string String(const std::string& key, const std::string& fallback) const {
    return Has(key) ? node_.Child(key).AsString() : fallback;
  }
  // A boolean key whose value `refused` shardlab cannot build.
  void Refuse(const std::string& key, bool refused, const std::string& why) const {
    if (Has(key) && node_.Child(key).AsBool() == refused)
      node_.Child(key).Fail(fmt::format("{} {} is not supported: {}", key, refused, why));
  }

 private:
  const JsonNode& node_;
};

// The MLP activation of a "hidden_act" / "activation_function" value, gated or not.
std::string Activation(const HfReader& r, const std::string& key, const std::string& fallback, bool gated) {
  const std::string act = r.String(key, fallback);
  static const std::map<std::string, std::string> plain = {{"gelu", "gelu"},
                                                           {"gelu_new", "gelu"},
                                                           {"gelu_pytorch_tanh", "gelu"},
                                                           {"gelu_fast", "fast_gelu"},
                                                           {"relu", "relu"}};
  if (gated) {
    if (act == "silu" || act == "swish") return "swiglu";
    if (plain.count(act) && plain.at(act) != "relu") return "geglu";
  } else if (plain.count(act)) {
    return plain.at(act);
  }
  std::vector<std::string> known = {"silu", "swish"};
  for (const auto& [name, unused] : plain) known.push_back(name);
  r.Child(key).Fail(
      fmt::format("activation {} is not supported here; expected one of {}", Quoted(act), fmt::join(known, ", ")));
}

// Training precision: bf16 unless the checkpoint is fp16 (fp32 checkpoints
// still train in mixed precision).
std::string TrainingDType(const HfReader& r) {
  return r.String("torch_dtype", "bfloat16") == "float16" ? "float16" : "bfloat16";
}

// Settings every Hugging Face model gets, as today's training stacks run them:
// fused attention, fused query/key/value and gate/up projections, no dropout
// unless the config asks for it, the vocabulary-parallel loss and embedding.
void ModernDefaults(BuilderParams& p, const HfReader& r) {
  p.Set("attention", std::string("flash"));
  p.Set("loss", std::string("vocab_parallel"));
  p.Set("vocab_emb_dp", false);
  p.Set("dtype", TrainingDType(r));
  p.Set("dropout", false);
  p.Set("qkv_concat", true);
  p.Set("ffn_concat", true);
}

// The shape keys LLaMA, GPT-NeoX and BERT configs share.
void StandardShape(BuilderParams& p, const HfReader& r) {
  p.Set("layers", r.Int("num_hidden_layers"));
  p.Set("hidden", r.Int("hidden_size"));
  p.Set("heads", r.Int("num_attention_heads"));
  p.Set("ffn_hidden", r.Int("intermediate_size"));
  p.Set("vocab_size", r.Int("vocab_size"));
}

// The training sequence length: the pre-training context a scaled-RoPE
// config records, else the position limit.
int64_t SequenceLength(const HfReader& r) {
  if (r.Has("rope_scaling") && r.Child("rope_scaling").json().is_object() &&
      r.Child("rope_scaling").json().contains("original_max_position_embeddings"))
    return r.Child("rope_scaling").Child("original_max_position_embeddings").AsInt(1, kMaxDim);
  return r.Int("max_position_embeddings");
}

// LLaMA 1/2/3, Mistral, Qwen2: RMSNorm, RoPE, SwiGLU, grouped-query attention.
void Llama(BuilderParams& p, const HfReader& r, const std::string& type) {
  ModernDefaults(p, r);
  StandardShape(p, r);
  p.Set("kv_heads", r.Int("num_key_value_heads", r.Int("num_attention_heads")));
  if (r.Has("head_dim")) p.Set("head_dim", r.Int("head_dim"));
  p.Set("seq_length", SequenceLength(r));
  p.Set("activation", Activation(r, "hidden_act", "silu", true));
  p.Set("norm", std::string("rms_norm"));
  p.Set("position_embedding", std::string("rope"));
  // Qwen2 always has query/key/value biases; LLaMA and Mistral have none.
  p.Set("linear_bias", std::string(type == "qwen2" ? "qkv" : "none"));
  r.Refuse("attention_bias", true, "shardlab builds attention biases only as Qwen2 has them (query/key/value)");
  r.Refuse("mlp_bias", true, "shardlab builds LLaMA MLPs without biases");
  p.Set("tie_word_embeddings", r.Bool("tie_word_embeddings", false));
}

// Mixtral: Mistral's attention, every MLP a mixture of SwiGLU experts
// (intermediate_size each), top-k routing with the balance loss.
void Mixtral(BuilderParams& p, const HfReader& r, const std::string& type) {
  Llama(p, r, type);
  p.Set("experts", r.Int("num_local_experts"));
  p.Set("experts_per_token", r.Int("num_experts_per_tok", 2));
  p.Set("router_aux_loss", r.Number("router_aux_loss_coef", 0.001) > 0);
}

// DeepSeek-V2/V3: LLaMA's norms and SwiGLU, multi-head latent attention, and
// mixtures of fine-grained experts with shared experts after the first dense
// layers. V3 scores experts by sigmoid with a selection bias (topk_method
// noaux_tc) beside a small balance loss. The multi-token-prediction module
// (num_nextn_predict_layers) is a run's choice (model_params.mtp_num_layers),
// not the config's: the checkpoint keeps it for speculative decoding.
void DeepSeek(BuilderParams& p, const HfReader& r, const std::string& type) {
  ModernDefaults(p, r);
  StandardShape(p, r);
  p.Set("qkv_concat", false);
  p.Set("seq_length", SequenceLength(r));
  p.Set("activation", Activation(r, "hidden_act", "silu", true));
  p.Set("norm", std::string("rms_norm"));
  p.Set("position_embedding", std::string("rope"));
  p.Set("linear_bias", std::string("none"));
  r.Refuse("attention_bias", true, "shardlab builds DeepSeek's attention without biases");
  p.Set("tie_word_embeddings", r.Bool("tie_word_embeddings", false));
  p.Set("kv_heads", r.Int("num_attention_heads"));
  p.Set("head_dim", r.Int("qk_nope_head_dim"));
  p.Set("rope_head_dim", r.Int("qk_rope_head_dim"));
  p.Set("v_head_dim", r.Int("v_head_dim"));
  p.Set("kv_lora_rank", r.Int("kv_lora_rank"));
  if (r.Has("q_lora_rank")) p.Set("q_lora_rank", r.Int("q_lora_rank"));
  if (r.Int("moe_layer_freq", 1) != 1)
    r.Child("moe_layer_freq").Fail("shardlab builds experts in every layer after first_k_dense_replace (freq 1)");
  p.Set("experts", r.Int("n_routed_experts"));
  p.Set("experts_per_token", r.Int("num_experts_per_tok"));
  p.Set("moe_ffn_hidden", r.Int("moe_intermediate_size"));
  auto count = [&](const std::string& key) { return r.Has(key) ? r.Child(key).AsInt(0, kMaxDim) : int64_t{0}; };
  p.Set("shared_experts", count("n_shared_experts"));
  p.Set("first_dense_layers", count("first_k_dense_replace"));
  const bool v3 = type == "deepseek_v3";
  p.Set("router_scoring", r.String("scoring_func", v3 ? "sigmoid" : "softmax") == "sigmoid" ? std::string("sigmoid")
                                                                                            : std::string("softmax"));
  p.Set("router_expert_bias", r.String("topk_method", v3 ? "noaux_tc" : "greedy") == "noaux_tc");
  p.Set("router_aux_loss", r.Number("aux_loss_alpha", 0.001) > 0);
  if (r.Has("n_group")) p.Set("moe_router_num_groups", r.Child("n_group").AsInt(1, kMaxDim));
  if (r.Has("topk_group")) p.Set("moe_router_group_topk", r.Child("topk_group").AsInt(1, kMaxDim));
}

void Gpt2(BuilderParams& p, const HfReader& r, const std::string&) {
  ModernDefaults(p, r);
  p.Set("layers", r.Int("n_layer"));
  p.Set("hidden", r.Int("n_embd"));
  p.Set("heads", r.Int("n_head"));
  p.Set("ffn_hidden", r.Int("n_inner", 4 * r.Int("n_embd")));
  p.Set("vocab_size", r.Int("vocab_size"));
  p.Set("max_positions", r.Int("n_positions"));
  p.Set("seq_length", r.Int("n_ctx", r.Int("n_positions")));
  p.Set("activation", Activation(r, "activation_function", "gelu_new", false));
  p.Set("tie_word_embeddings", r.Bool("tie_word_embeddings", true));
  p.Set("dropout", r.Number("resid_pdrop", 0.1) > 0);
}

void GptNeox(BuilderParams& p, const HfReader& r, const std::string&) {
  ModernDefaults(p, r);
  StandardShape(p, r);
  p.Set("seq_length", r.Int("max_position_embeddings"));
  p.Set("activation", Activation(r, "hidden_act", "gelu", false));
  p.Set("position_embedding", std::string("rope"));
  r.Refuse("attention_bias", false, "shardlab builds GPT-NeoX with biases on every linear layer");
  p.Set("parallel_residual", r.Bool("use_parallel_residual", true));
  p.Set("tie_word_embeddings", r.Bool("tie_word_embeddings", false));
  p.Set("dropout", r.Number("hidden_dropout", 0) > 0);
}

void Bert(BuilderParams& p, const HfReader& r, const std::string&) {
  ModernDefaults(p, r);
  p.Set("vocab_emb_dp", true);  // BERT's decoder reuses the embedding table whole
  StandardShape(p, r);
  p.Set("max_positions", r.Int("max_position_embeddings"));
  p.Set("seq_length", r.Int("max_position_embeddings"));
  p.Set("activation", Activation(r, "hidden_act", "gelu", false));
  if (r.Int("type_vocab_size", 2) != 2) r.Child("type_vocab_size").Fail("shardlab builds BERT with 2 token types");
  p.Set("dropout", r.Number("hidden_dropout_prob", 0.1) > 0);
}

struct Architecture {
  std::string builder;
  std::function<void(BuilderParams&, const HfReader&, const std::string&)> read;
};

const std::map<std::string, Architecture>& Architectures() {
  static const std::map<std::string, Architecture> architectures = {
      {"llama", {"gpt", Llama}},     {"mistral", {"gpt", Llama}},        {"qwen2", {"gpt", Llama}},
      {"mixtral", {"gpt", Mixtral}}, {"deepseek_v2", {"gpt", DeepSeek}}, {"deepseek_v3", {"gpt", DeepSeek}},
      {"gpt2", {"gpt", Gpt2}},       {"gpt_neox", {"gpt", GptNeox}},     {"bert", {"bert", Bert}},
  };
  return architectures;
}

// The model's name: the folder a config.json sits in (as a downloaded
// checkpoint is laid out), else the file's own name.
std::string NameFromFile(const std::string& file) {
  const std::filesystem::path path(file);
  if (path.filename() == "config.json" && path.has_parent_path() && !path.parent_path().filename().empty())
    return path.parent_path().filename().string();
  return path.stem().string();
}

}  // namespace

bool IsHfModelConfig(const JsonNode& node) { return node.json().is_object() && node.json().contains("model_type"); }

const std::vector<std::string>& HfModelTypes() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> names;
    for (const auto& [name, unused] : Architectures()) names.push_back(name);
    return names;
  }();
  return types;
}

ModelSpec ReadHfModelSpec(const JsonNode& node) {
  const JsonNode type_node = node.Child("model_type");
  const std::string type = type_node.AsString();
  const auto found = Architectures().find(type);
  if (found == Architectures().end())
    type_node.Fail(fmt::format("Hugging Face model_type {} is not supported; shardlab reads {}", Quoted(type),
                               fmt::join(HfModelTypes(), ", ")));
  ModelSpec model;
  model.name = NameFromFile(node.file());
  model.builder = found->second.builder;
  model.params = FindModelBuilder(model.builder)->Defaults();
  found->second.read(model.params, HfReader(node), type);
  for (const ParamSpec& spec : FindModelBuilder(model.builder)->params) {
    if (!std::holds_alternative<int64_t>(spec.fallback)) continue;
    const int64_t value = model.params.Int(spec.name);
    if (value < spec.min || value > spec.max)
      node.Fail(
          fmt::format("this {} config gives {} = {}, outside {}..{}", type, spec.name, value, spec.min, spec.max));
  }
  return model;
}

}  // namespace shardlab
