#include "core/graph/graph_builder.h"

namespace shardlab {

int GraphBuilder::Input(const std::string& name, Shape shape, DType dtype) {
  return graph_.AddInput(scope_ + name, std::move(shape), dtype);
}

int GraphBuilder::Parameter(const std::string& name, Shape shape, DType dtype, bool trainable) {
  const int index = graph_.AddParameter(scope_ + name, std::move(shape), dtype);
  graph_.mutable_tensor(index).requires_grad = trainable && !frozen_;
  return index;
}

void GraphBuilder::SetProducerAttr(int tensor, const std::string& key, AttrValue value) {
  graph_.mutable_op(graph_.tensor(tensor).producer).attrs[key] = std::move(value);
}

int GraphBuilder::Add(const std::string& type, const std::string& name, std::vector<int> inputs, Attrs attrs,
                      OptStrategy s) {
  Operator op;
  op.name = scope_ + name;
  op.type = type;
  op.inputs = std::move(inputs);
  op.attrs = std::move(attrs);
  if (on_host_) op.attrs["primitive_target"] = std::string("CPU");
  op.strategy = std::move(s);
  op.recompute = recompute_;
  op.offload_activations = offload_;
  op.pipeline_stage = stage_;
  const int index = graph_.AddOperator(std::move(op));
  return graph_.op(index).outputs.front();
}

int GraphBuilder::MatMul(const std::string& name, int a, int b, bool transpose_a, bool transpose_b, OptStrategy s,
                         bool forward_reduce_scatter) {
  Attrs attrs = {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}};
  if (forward_reduce_scatter) attrs["forward_reduce_scatter"] = true;
  return Add("MatMul", name, {a, b}, std::move(attrs), std::move(s));
}

int GraphBuilder::BatchMatMul(const std::string& name, int a, int b, bool transpose_a, bool transpose_b,
                              OptStrategy s) {
  return Add("BatchMatMul", name, {a, b}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}}, std::move(s));
}

int GraphBuilder::Binary(const std::string& type, const std::string& name, int a, int b, OptStrategy s) {
  return Add(type, name, {a, b}, {}, std::move(s));
}

int GraphBuilder::BiasAdd(const std::string& name, int x, int bias, OptStrategy s) {
  return Add("BiasAdd", name, {x, bias}, {}, std::move(s));
}

int GraphBuilder::Activation(const std::string& type, const std::string& name, int x, OptStrategy s) {
  return Add(type, name, {x}, {}, std::move(s));
}

int GraphBuilder::Cast(const std::string& name, int x, DType dtype, OptStrategy s) {
  return Add("Cast", name, {x}, {{"dtype", std::string(ToString(dtype))}}, std::move(s));
}

int GraphBuilder::Softmax(const std::string& name, int x, int64_t axis, OptStrategy s) {
  return Add("Softmax", name, {x}, {{"axis", std::vector<int64_t>{axis}}}, std::move(s));
}

int GraphBuilder::LayerNorm(const std::string& name, int x, int gamma, int beta, OptStrategy s) {
  return Add("LayerNorm", name, {x, gamma, beta},
             {{"begin_norm_axis", int64_t{-1}}, {"begin_params_axis", int64_t{-1}}}, std::move(s));
}

int GraphBuilder::RmsNorm(const std::string& name, int x, int gamma, OptStrategy s) {
  return Add("RmsNorm", name, {x, gamma}, {}, std::move(s));
}

int GraphBuilder::RotaryPositionEmbedding(const std::string& name, int x, OptStrategy s) {
  return Add("RotaryPositionEmbedding", name, {x}, {}, std::move(s));
}

int GraphBuilder::FlashAttention(const std::string& name, int query, int key, int value, bool causal, OptStrategy s,
                                 const std::string& layout) {
  return Add("FlashAttentionScore", name, {query, key, value},
             {{"head_num", shape(query)[layout == "BSND" ? 2 : 1]},
              {"input_layout", layout},
              {"sparse_mode", int64_t{causal ? 2 : 0}}},
             std::move(s));
}

int GraphBuilder::Dropout(const std::string& name, int x, double keep_prob, OptStrategy s) {
  return Add("Dropout", name, {x}, {{"keep_prob", keep_prob}}, std::move(s));
}

int GraphBuilder::Reduce(const std::string& type, const std::string& name, int x, std::vector<int64_t> axes,
                         bool keep_dims, OptStrategy s) {
  return Add(type, name, {x}, {{"axis", std::move(axes)}, {"keep_dims", keep_dims}}, std::move(s));
}

int GraphBuilder::Gather(const std::string& name, int params, int indices, int64_t axis, OptStrategy s) {
  return Add("Gather", name, {params, indices}, {{"axis", axis}}, std::move(s));
}

int GraphBuilder::BatchLocalGather(const std::string& name, int params, int indices, OptStrategy s) {
  return Add("Gather", name, {params, indices}, {{"axis", int64_t{0}}, {"batch_local", true}}, std::move(s));
}

int GraphBuilder::Reshape(const std::string& name, int x, Shape shape) {
  return Add("Reshape", name, {x}, {{"shape", std::move(shape)}}, std::nullopt);
}

int GraphBuilder::Flatten(const std::string& name, int x) { return Add("Flatten", name, {x}, {}, std::nullopt); }

std::vector<int> GraphBuilder::SplitV(const std::string& name, int x, int64_t split_dim, std::vector<int64_t> sizes,
                                      OptStrategy s) {
  Add("SplitV", name, {x}, {{"size_splits", std::move(sizes)}, {"split_dim", split_dim}}, std::move(s));
  return graph_.operators().back().outputs;
}

int GraphBuilder::Transpose(const std::string& name, int x, std::vector<int64_t> perm, OptStrategy s) {
  return Add("Transpose", name, {x}, {{"perm", std::move(perm)}}, std::move(s));
}

int GraphBuilder::Concat(const std::string& name, std::vector<int> inputs, int64_t axis, OptStrategy s) {
  return Add("Concat", name, std::move(inputs), {{"axis", axis}}, std::move(s));
}

int GraphBuilder::BroadcastTo(const std::string& name, int x, Shape shape, OptStrategy s) {
  return Add("BroadcastTo", name, {x}, {{"shape", std::move(shape)}}, std::move(s));
}

std::pair<int, int> GraphBuilder::TopK(const std::string& name, int x, int64_t k, OptStrategy s) {
  Add("TopK", name, {x}, {{"k", k}}, std::move(s));
  const auto& outputs = graph_.operators().back().outputs;
  return {outputs[0], outputs[1]};
}

int GraphBuilder::MoeDispatch(const std::string& name, int x, int expert_ids, int64_t experts, int64_t capacity,
                              OptStrategy s) {
  return Add("MoeDispatch", name, {x, expert_ids}, {{"expert_num", experts}, {"capacity", capacity}}, std::move(s));
}

int GraphBuilder::MoeCombine(const std::string& name, int y, int expert_ids, int weights, OptStrategy s) {
  return Add("MoeCombine", name, {y, expert_ids, weights}, {}, std::move(s));
}

int GraphBuilder::OneHot(const std::string& name, int indices, int64_t depth, DType dtype, OptStrategy s) {
  return Add("OneHot", name, {indices},
             {{"depth", depth}, {"axis", int64_t{-1}}, {"dtype", std::string(ToString(dtype))}}, std::move(s));
}

int GraphBuilder::SoftmaxCrossEntropy(const std::string& name, int logits, int labels, OptStrategy s) {
  return Add("SoftmaxCrossEntropyWithLogits", name, {logits, labels}, {}, std::move(s));
}

int GraphBuilder::CrossEntropyLoss(const std::string& name, int logits, int labels, OptStrategy s) {
  return Add("CrossEntropyLoss", name, {logits, labels}, {}, std::move(s));
}

int GraphBuilder::SigmoidCrossEntropy(const std::string& name, int logits, int labels, OptStrategy s) {
  return Add("SigmoidCrossEntropyWithLogits", name, {logits, labels}, {}, std::move(s));
}

int GraphBuilder::Conv2D(const std::string& name, int x, int weight, int64_t stride, int64_t pad, OptStrategy s) {
  return Add("Conv2D", name, {x, weight}, {{"stride", stride}, {"pad", pad}, {"group", int64_t{1}}}, std::move(s));
}

int GraphBuilder::Pool(const std::string& type, const std::string& name, int x, int64_t kernel, int64_t stride,
                       int64_t pad, OptStrategy s) {
  return Add(type, name, {x}, {{"kernel_size", kernel}, {"stride", stride}, {"pad", pad}}, std::move(s));
}

int GraphBuilder::BatchNorm(const std::string& name, int x, int scale, int bias, int mean, int variance,
                            OptStrategy s) {
  return Add("BatchNorm", name, {x, scale, bias, mean, variance}, {}, std::move(s));
}

}  // namespace shardlab
