// Builds operator graphs with MindSpore primitive semantics: each call adds
// one operator, infers its output shape and checks its input shapes. Model
// builders (core/graph/builders) and tests use it; the current pipeline stage,
// recompute flag and name scope apply to every operator added.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "core/graph/graph.h"

namespace shardlab {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name) : graph_(std::move(graph_name)) {}

  Graph Finish() { return std::move(graph_); }
  const Graph& graph() const { return graph_; }

  void set_stage(int64_t stage) { stage_ = stage; }
  void set_recompute(bool recompute) { recompute_ = recompute; }
  bool recompute() const { return recompute_; }
  void set_offload(bool offload) { offload_ = offload; }
  // Operators added while on run on the host CPU (MindSpore's primitive_target "CPU").
  void set_on_host(bool on_host) { on_host_ = on_host; }
  // Parameters added while frozen get no gradient and no optimizer state
  // (a LoRA fine-tune's base model).
  void set_frozen(bool frozen) { frozen_ = frozen; }
  // Prefix for operator and parameter names, e.g. "layer3/".
  void set_scope(std::string scope) { scope_ = std::move(scope); }
  const Shape& shape(int tensor) const { return graph_.tensor(tensor).shape; }
  // Sets an attribute of the operator that produced `tensor`.
  void SetProducerAttr(int tensor, const std::string& key, AttrValue value);

  int Input(const std::string& name, Shape shape, DType dtype);
  // A weight; non-trainable ones (BatchNorm's moving statistics, anything
  // added while frozen) get no gradient.
  int Parameter(const std::string& name, Shape shape, DType dtype, bool trainable = true);

  using OptStrategy = std::optional<Strategy>;
  // `forward_reduce_scatter`: a split reduction dimension ends in a
  // ReduceScatter over the rows instead of an AllReduce (sequence parallel).
  int MatMul(const std::string& name, int a, int b, bool transpose_a, bool transpose_b, OptStrategy s = {},
             bool forward_reduce_scatter = false);
  int BatchMatMul(const std::string& name, int a, int b, bool transpose_a, bool transpose_b, OptStrategy s = {});
  // Add, Sub, Mul, RealDiv, Maximum, Minimum with numpy broadcasting.
  int Binary(const std::string& type, const std::string& name, int a, int b, OptStrategy s = {});
  int BiasAdd(const std::string& name, int x, int bias, OptStrategy s = {});
  // ReLU, GeLU, FastGeLU, Tanh, Sigmoid, SiLU.
  int Activation(const std::string& type, const std::string& name, int x, OptStrategy s = {});
  int Cast(const std::string& name, int x, DType dtype, OptStrategy s = {});
  int Softmax(const std::string& name, int x, int64_t axis = -1, OptStrategy s = {});
  int LayerNorm(const std::string& name, int x, int gamma, int beta, OptStrategy s = {});
  int RmsNorm(const std::string& name, int x, int gamma, OptStrategy s = {});
  // Rotates pairs of the last dimension by position (RoPE).
  int RotaryPositionEmbedding(const std::string& name, int x, OptStrategy s = {});
  // Fused attention over BNSD query/key/value, no [seq, seq] tensor kept;
  // `causal` masks future positions (sparse_mode 2).
  // `layout`: BNSD ([batch, heads, seq, head_dim]) or BSND.
  int FlashAttention(const std::string& name, int query, int key, int value, bool causal, OptStrategy s = {},
                     const std::string& layout = "BNSD");
  int Dropout(const std::string& name, int x, double keep_prob, OptStrategy s = {});
  // ReduceSum, ReduceMean, ReduceMax, ReduceMin; empty axes = all.
  int Reduce(const std::string& type, const std::string& name, int x, std::vector<int64_t> axes, bool keep_dims,
             OptStrategy s = {});
  int Gather(const std::string& name, int params, int indices, int64_t axis, OptStrategy s = {});
  // A Gather along axis 0 of a batch-major activation whose indices address
  // rows of the device's own batch slice (offsets computed from the local
  // batch, as BERT's masked-LM head does): attr "batch_local". Split along
  // the batch, every device gathers from its own rows without communication.
  int BatchLocalGather(const std::string& name, int params, int indices, OptStrategy s = {});
  int Reshape(const std::string& name, int x, Shape shape);
  int Flatten(const std::string& name, int x);
  // Cuts x along `split_dim` into parts of `sizes`; returns the parts.
  std::vector<int> SplitV(const std::string& name, int x, int64_t split_dim, std::vector<int64_t> sizes,
                          OptStrategy s = {});
  int Transpose(const std::string& name, int x, std::vector<int64_t> perm, OptStrategy s = {});
  int Concat(const std::string& name, std::vector<int> inputs, int64_t axis, OptStrategy s = {});
  int BroadcastTo(const std::string& name, int x, Shape shape, OptStrategy s = {});
  // The k largest entries of the last dimension: {values, int32 indices}.
  std::pair<int, int> TopK(const std::string& name, int x, int64_t k, OptStrategy s = {});
  // Routes x [groups, tokens, hidden] to `experts` experts of `capacity` slots each.
  int MoeDispatch(const std::string& name, int x, int expert_ids, int64_t experts, int64_t capacity,
                  OptStrategy s = {});
  // Sums the expert outputs back per token, weighted by `weights`.
  int MoeCombine(const std::string& name, int y, int expert_ids, int weights, OptStrategy s = {});
  int OneHot(const std::string& name, int indices, int64_t depth, DType dtype, OptStrategy s = {});
  // Returns the per-sample loss ([batch]).
  int SoftmaxCrossEntropy(const std::string& name, int logits, int labels, OptStrategy s = {});
  // Per-row loss of [rows, classes] logits against [rows] class indices.
  int CrossEntropyLoss(const std::string& name, int logits, int labels, OptStrategy s = {});
  int SigmoidCrossEntropy(const std::string& name, int logits, int labels, OptStrategy s = {});
  // NCHW input, [out_channels, in_channels, kh, kw] weight.
  int Conv2D(const std::string& name, int x, int weight, int64_t stride, int64_t pad, OptStrategy s = {});
  // MaxPool or AvgPool over NCHW.
  int Pool(const std::string& type, const std::string& name, int x, int64_t kernel, int64_t stride, int64_t pad,
           OptStrategy s = {});
  int BatchNorm(const std::string& name, int x, int scale, int bias, int mean, int variance, OptStrategy s = {});

 private:
  int Add(const std::string& type, const std::string& name, std::vector<int> inputs, Attrs attrs, OptStrategy s);

  Graph graph_;
  int64_t stage_ = 0;
  bool recompute_ = false;
  bool offload_ = false;
  bool on_host_ = false;
  bool frozen_ = false;
  std::string scope_;
};

}  // namespace shardlab
