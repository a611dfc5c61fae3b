// Hugging Face config.json models: exact published parameter counts, the
// transformer FLOPs formula, and one-line errors for what cannot be built.
#include "core/config/hf_model_config.h"

#include <string>

#include "core/flow/prepared_run.h"
#include "core/ops/flops.h"
#include "core/report/graph_summary.h"
#include "core/util/json_reader.h"
#include "tests/test_util.h"

namespace shardlab {
namespace {

using testing::Doc;
using testing::ExpectConfigError;

ModelSpec Shipped(const std::string& folder) {
  const std::string path = testing::SourcePath("configs/models/hf/" + folder + "/config.json");
  const nlohmann::json doc = ReadJsonFile(path);
  return ReadModelSpec(JsonNode(doc, path));
}

Graph Build(const ModelSpec& model) {
  const nlohmann::json none = nlohmann::json::object();
  return BuildModelGraph(model, BuildOptions{}, JsonNode(none, "test"));
}

int64_t Parameters(const ModelSpec& model) { return SummarizeGraph(Build(model), 1).parameters; }

TEST_CASE("shipped Hugging Face configs build with their published parameter counts") {
  // The counts Hugging Face lists for each checkpoint (model card / safetensors index).
  const std::pair<const char*, int64_t> published[] = {
      {"Llama-2-7b-hf", 6738415616},      {"Llama-2-70b-hf", 68976648192},  {"Meta-Llama-3-8B", 8030261248},
      {"Meta-Llama-3-70B", 70553706496},  {"Llama-3.1-405B", 405853388800}, {"Qwen2-72B", 72706203648},
      {"Mixtral-8x7B-v0.1", 46702792704}, {"DeepSeek-V3", 671026404352},
  };
  for (const auto& [folder, count] : published) {
    INFO(folder);
    const ModelSpec model = Shipped(folder);
    CHECK(model.name == folder);
    CHECK(model.builder == "gpt");
    CHECK(Parameters(model) == count);
  }
}

TEST_CASE("DeepSeek-V3 builds its 671 B parameters with latent attention and 256 experts") {
  const ModelSpec model = Shipped("DeepSeek-V3");
  const GraphSummary s = SummarizeGraph(Build(model), 1);
  // From the config: embedding and head 2 x 129280 x 7168; per layer MLA 187,107,328 and two norms;
  // 3 dense MLPs of 3 x 7168 x 18432; 58 MoE layers of 256 + 1 experts of 3 x 7168 x 2048 and a
  // router [256, 7168]; the final norm. The technical report's 671 B (its 14 B multi-token
  // prediction module aside).
  const int64_t h = 7168, attention = 187107328, norms = 2 * h, expert = 3 * h * 2048;
  const int64_t dense_layer = attention + norms + 3 * h * 18432;
  const int64_t moe_layer = attention + norms + 257 * expert + 256 * h;
  CHECK(s.parameters == 2 * 129280 * h + 3 * dense_layer + 58 * moe_layer + h);
  CHECK(s.parameters == 671026404352);
  // The selection bias of each MoE layer's router is not trained by gradients.
  CHECK(s.non_trainable_parameters == 58 * 256);
  CHECK(model.params.Int("kv_lora_rank") == 512);
  CHECK(model.params.Int("q_lora_rank") == 1536);
  CHECK(model.params.String("router_scoring") == "sigmoid");
  CHECK(model.params.Int("first_dense_layers") == 3);
  CHECK(model.params.Int("seq_length") == 4096);  // rope_scaling's original context
  // Group-limited routing: n_group 8, topk_group 4.
  CHECK(model.params.Int("moe_router_num_groups") == 8);
  CHECK(model.params.Int("moe_router_group_topk") == 4);

  // Multi-token prediction (num_nextn_predict_layers 1, built when a run asks: mtp_num_layers): one more
  // MoE layer, the projection of the joined hidden states and embeddings [h, 2h], and its three norms; the
  // embedding and head are the model's on one stage. (The technical report's 685 B counts the
  // checkpoint's copies of the embedding and head too.)
  ModelSpec with_mtp = model;
  with_mtp.params.Set("mtp_num_layers", int64_t{1});
  const int64_t mtp = moe_layer + 2 * h * h + 3 * h;
  CHECK(SummarizeGraph(Build(with_mtp), 1).parameters == s.parameters + mtp);
  // On the last of two stages it embeds with a copy of the table, as Megatron keeps one there.
  BuildOptions two;
  two.pipeline_stages = 2;
  const nlohmann::json none = nlohmann::json::object();
  const Graph staged = BuildModelGraph(with_mtp, two, JsonNode(none, "test"));
  CHECK(SummarizeGraph(staged, 1).parameters == s.parameters + mtp + 129280 * h);
  for (const char* op : {"mtp1/embedding", "mtp1/eh_proj", "mtp1/head/logits", "mtp1/loss/mean"}) {
    INFO(op);
    REQUIRE(staged.FindOperator(op));
    CHECK(staged.op(*staged.FindOperator(op)).pipeline_stage == 1);
  }
  CHECK(staged.FindTensor("mtp/word.table"));
  // Its layer is a MoE layer like the last: its experts' products are there.
  CHECK(staged.FindOperator("mtp1/moe/experts.gate_up"));
  // Full recompute recomputes its norms, projection, layer and final norm, not its embedding or head
  // (Megatron's _checkpointed_forward over _proj_and_transformer_layer, which ends with the final norm).
  BuildOptions recomputed = two;
  recomputed.recompute = true;
  const Graph full = BuildModelGraph(with_mtp, recomputed, JsonNode(none, "test"));
  const auto recomputes = [&](const char* name) {
    INFO(name);
    REQUIRE(full.FindOperator(name));
    return full.op(*full.FindOperator(name)).recompute;
  };
  for (const char* op : {"mtp1/enorm", "mtp1/join", "mtp1/eh_proj", "mtp1/moe/experts.gate_up", "mtp1/final_norm"})
    CHECK(recomputes(op));
  for (const char* op : {"mtp1/embedding", "mtp1/head/logits", "mtp1/loss/mean"}) CHECK_FALSE(recomputes(op));
  CHECK_FALSE(staged.op(*staged.FindOperator("mtp1/eh_proj")).recompute);
}

TEST_CASE("DeepSeek-V2-Lite builds its 15.7 B parameters: queries without a latent, softmax routing") {
  // deepseek-ai/DeepSeek-V2-Lite's config.json (the keys shardlab reads, and some it leaves).
  Doc doc(R"({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
      "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
      "n_shared_experts": 2, "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
      "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
      "v_head_dim": 128, "vocab_size": 102400, "max_position_embeddings": 163840,
      "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
      "topk_method": "greedy", "scoring_func": "softmax", "n_group": 1, "topk_group": 1, "aux_loss_alpha": 0.001,
      "norm_topk_prob": false, "routed_scaling_factor": 1.0, "hidden_act": "silu", "tie_word_embeddings": false,
      "torch_dtype": "bfloat16", "attention_bias": false, "rms_norm_eps": 1e-06})",
          "config.json");
  const ModelSpec model = ReadModelSpec(doc.root());
  // Attention: queries h x 16 x 192, the key-value latent and rotary key h x 576 with its norm
  // (512), their up projection 512 x 16 x 256, the output 2048 x h: 13,763,072. One dense layer
  // of 3 x h x 10944; 26 MoE layers of 66 experts of 3 x h x 1408 and a router [64, h]; two norms
  // a layer, the final norm, an untied embedding and head of 102400 x h.
  const int64_t h = 2048, attention = 13763072, norms = 2 * h;
  const int64_t dense_layer = attention + norms + 3 * h * 10944;
  const int64_t moe_layer = attention + norms + 66 * 3 * h * 1408 + 64 * h;
  const GraphSummary s = SummarizeGraph(Build(model), 1);
  CHECK(s.parameters == 2 * 102400 * h + dense_layer + 26 * moe_layer + h);
  CHECK(s.parameters == 15706484224);      // the model card's 15.7 B
  CHECK(s.non_trainable_parameters == 0);  // no selection bias (topk_method greedy)
  CHECK(model.params.String("router_scoring") == "softmax");
  CHECK_FALSE(model.params.Bool("router_expert_bias"));
  CHECK(model.params.Int("q_lora_rank") == 0);  // queries projected directly
  CHECK(model.params.Int("seq_length") == 4096);
}

TEST_CASE("latent attention costs the query's 192-wide and the value's 128-wide products per pair") {
  ModelSpec model = Shipped("DeepSeek-V3");
  model.params.Set("layers", int64_t{1});
  model.params.Set("first_dense_layers", int64_t{1});
  const Graph graph = Build(model);
  int found = 0;
  for (const Operator& op : graph.operators()) {
    if (op.type != "FlashAttentionScore") continue;
    ++found;
    const double pairs = 128.0 * 4096 * 4096 / 2;  // causal: half the query-key pairs of each head
    const OpWork work = ComputeOpWork(graph, op);
    CHECK(work.forward_flops == 2 * (192 + 128) * pairs);
    CHECK(work.backward_flops == 2 * (3 * 192 + 2 * 128) * pairs);  // dQ, dK, Q·Kᵀ at 192; dV, dP at 128
    // Model FLOPs (TFLOP/s, MFU) count every pair and a backward of twice the forward.
    const ModelFlops model_flops = ComputeModelFlops(graph, op);
    CHECK(model_flops.forward == 2 * (192 + 128) * (2 * pairs));
    CHECK(model_flops.backward == 2 * model_flops.forward);
    CHECK(graph.tensor(op.outputs[0]).shape == Shape{1, 128, 4096, 128});
  }
  REQUIRE(found == 1);
}

TEST_CASE("LLaMA-3 405B trains at its pre-training context and keeps its grouped-query heads") {
  const ModelSpec m = Shipped("Llama-3.1-405B");
  CHECK(m.params.Int("seq_length") == 8192);  // rope_scaling's original_max_position_embeddings, not 131072
  CHECK(m.params.Int("kv_heads") == 8);
  CHECK(m.params.String("activation") == "swiglu");
  CHECK(m.params.String("norm") == "rms_norm");
  CHECK(m.params.String("position_embedding") == "rope");
  CHECK(m.params.String("attention") == "flash");
  CHECK(m.params.String("dtype") == "bfloat16");
  CHECK_FALSE(m.params.Bool("tie_word_embeddings"));
}

TEST_CASE("GPT-2 GPT-NeoX Mistral and BERT configs give their published parameter counts") {
  struct Case {
    const char* json;
    int64_t count;
  };
  const Case cases[] = {
      // gpt2 (124M): tied embeddings, 1024 learned positions, biases everywhere.
      {R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "n_ctx": 1024,
           "vocab_size": 50257, "activation_function": "gelu_new", "resid_pdrop": 0.1})",
       124439808},
      // EleutherAI/gpt-neox-20b: parallel residual, untied output embedding.
      {R"({"model_type": "gpt_neox", "hidden_size": 6144, "num_hidden_layers": 44, "num_attention_heads": 64,
           "intermediate_size": 24576, "vocab_size": 50432, "max_position_embeddings": 2048, "rotary_pct": 0.25,
           "use_parallel_residual": true, "tie_word_embeddings": false, "hidden_act": "gelu_fast"})",
       20554567680},
      // mistralai/Mistral-7B-v0.1.
      {R"({"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
           "max_position_embeddings": 32768, "hidden_act": "silu", "tie_word_embeddings": false})",
       7241732096},
      // bert-base-uncased with its pre-training heads (BertForPreTraining).
      {R"({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
           "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2,
           "hidden_act": "gelu"})",
       110106428},
  };
  for (const Case& c : cases) {
    Doc doc(c.json, "config.json");
    const ModelSpec model = ReadModelSpec(doc.root());
    INFO(c.json);
    CHECK(Parameters(model) == c.count);
  }
}

TEST_CASE("a LLaMA forward pass costs 2 FLOPs per weight per token plus causal attention") {
  ModelSpec m = Shipped("Llama-2-7b-hf");
  m.params.Set("layers", int64_t{4});
  m.params.Set("seq_length", int64_t{2048});
  const GraphSummary s = SummarizeGraph(Build(m), 1);
  const double tokens = 2048, hidden = 4096, layers = 4, vocab = 32000;
  // Weights multiplied per token: every layer's matrices and the LM head (not the embedding lookup).
  const double matmul_weights = static_cast<double>(s.parameters) - vocab * hidden - (2 * layers + 1) * hidden;
  // Causal attention: Q·Kᵀ and P·V over half the (query, key) pairs.
  const double attention = 2 * 2 * tokens * tokens * hidden * layers * 0.5;
  const double formula = 2 * matmul_weights * tokens + attention;
  // Norms, RoPE, SiLU, products and the loss add well under 1%.
  CHECK(s.forward_flops > formula);
  CHECK(s.forward_flops < 1.01 * formula);
}

TEST_CASE("a step's model FLOPs are Megatron-LM's num_floating_point_operations") {
  // LLaMA-2 70B as Megatron counts it, 12 s L h^2 ((1 + groups/heads + s/h) + 3/2 ffn/h) + 6 s h V
  // per sequence, written out per token: 6 FLOPs per weight of the query and output
  // projections, the grouped keys and values and the SwiGLU MLP; attention's 12 s h per layer
  // (every query-key pair, backward twice forward); the LM head's 6 h V.
  const RunSpec run = LoadRunFile(testing::SourcePath("configs/runs/llama2-70b-h100-1024.json"));
  const PreparedRun prepared = Prepare(run);
  const double s = 4096, h = 8192, kv = 8 * 128, layers = 80, ffn = 28672, vocab = 32000;
  const double per_layer_weights = 2 * h * h + 2 * h * kv + 3 * h * ffn;
  const double per_token = 6 * per_layer_weights * layers + 12 * s * h * layers + 6 * h * vocab;
  const double megatron = per_token * s * static_cast<double>(run.parallel.global_batch_size);
  // Norms, RoPE, SiLU, products and the loss add well under 1%.
  CHECK(prepared.plan.model_flops > megatron);
  CHECK(prepared.plan.model_flops < 1.01 * megatron);
}

TEST_CASE("Hugging Face configs shardlab cannot build are one-line errors at the key") {
  auto error = [](const std::string& text, const std::string& pointer) {
    Doc doc(text, "config.json");
    const ConfigError e = ExpectConfigError([&] { ReadModelSpec(doc.root()); });
    CHECK(e.pointer() == pointer);
    return std::string(e.what());
  };
  const std::string unknown = error(R"({"model_type": "t5"})", "/model_type");
  CHECK(unknown.find("\"t5\" is not supported") != std::string::npos);
  CHECK(unknown.find("llama") != std::string::npos);
  CHECK(unknown.find("gpt_neox") != std::string::npos);
  CHECK(error(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64,
                 "attention_bias": true})",
              "/attention_bias")
            .find("not supported") != std::string::npos);
  CHECK(error(R"({"model_type": "llama", "hidden_size": "big", "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64})",
              "/hidden_size")
            .find("integer") != std::string::npos);
  CHECK(error(R"({"model_type": "llama", "hidden_size": 64})", "").find("num_hidden_layers") != std::string::npos);
  CHECK(error(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64, "hidden_act": "tanh"})",
              "/hidden_act")
            .find("\"tanh\"") != std::string::npos);
}

}  // namespace
}  // namespace shardlab
