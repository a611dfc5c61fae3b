#include "core/plan/kernel_fusion.h"

#include <set>
#include <string>

#include "core/graph/fp8_format.h"
#include "core/graph/op_types.h"

namespace shardlab {
namespace {

// Element-wise families: one output element from the same place of each input.
bool Elementwise(const std::string& type) {
  const OpTypeInfo* info = FindOpType(type);
  if (!info) return false;
  const std::string family = info->family;
  return family == "elementwise" || family == "bias_add" || family == "activation" || family == "dropout";
}

// A chain ends at most in a softmax (Megatron's scale+mask+softmax kernel).
bool FusibleConsumer(const std::string& type) { return Elementwise(type) || type == "Softmax"; }

double SliceBytes(const TensorLayout& layout, DType dtype) {
  return static_cast<double>(ElementCount(layout.SliceShape())) * static_cast<double>(DTypeBytes(dtype));
}

// Chains of element-wise operators: a tensor kept in registers is neither
// written by its producer nor read back by its consumer.
void FuseElementwiseChains(const Graph& graph, const std::vector<OpLayout>& layouts, std::vector<FusedKernel>& fused) {
  for (size_t c = 0; c < graph.operators().size(); ++c) {
    const Operator& consumer = graph.op(static_cast<int>(c));
    if (!FusibleConsumer(consumer.type) || consumer.OnHost()) continue;
    std::set<int> fused_inputs;
    for (size_t i = 0; i < consumer.inputs.size(); ++i) {
      const int t = consumer.inputs[i];
      const Tensor& tensor = graph.tensor(t);
      if (tensor.producer < 0 || graph.Consumers(t).size() != 1) continue;
      const Operator& producer = graph.op(tensor.producer);
      // A recomputed operator reruns alone: a chain never spans a recompute boundary.
      if (!Elementwise(producer.type) || producer.pipeline_stage != consumer.pipeline_stage || producer.OnHost() ||
          producer.recompute != consumer.recompute)
        continue;
      int out = 0;
      while (producer.outputs[static_cast<size_t>(out)] != t) ++out;
      const TensorLayout& written = layouts[static_cast<size_t>(tensor.producer)].outputs[static_cast<size_t>(out)];
      const TensorLayout& read = layouts[c].inputs[i];
      if (!(written == read)) continue;
      const double bytes = SliceBytes(read, tensor.dtype);
      fused[c].follows_producer = true;
      fused[c].register_inputs.push_back(static_cast<int>(i));
      fused[c].saved_forward_bytes += bytes;  // not read back (each use: Mul(x, x) reads it twice)
      if (fused_inputs.insert(t).second)
        fused[static_cast<size_t>(tensor.producer)].saved_forward_bytes += bytes;  // not written, once
    }
  }
}

}  // namespace

std::vector<FusedKernel> PlanKernelFusion(const Graph& graph, const std::vector<OpLayout>& layouts,
                                          const SoftwareStack& stack) {
  std::vector<FusedKernel> fused(graph.operators().size());
  if (stack.split_views)
    for (size_t c = 0; c < graph.operators().size(); ++c) {
      const Operator& op = graph.op(static_cast<int>(c));
      if (op.type != "SplitV" || op.OnHost()) continue;
      // Neither the input read nor the slices written: views.
      fused[c].follows_producer = true;
      fused[c].saved_forward_bytes = SliceBytes(layouts[c].inputs[0], graph.tensor(op.inputs[0]).dtype);
      for (size_t o = 0; o < op.outputs.size(); ++o)
        fused[c].saved_forward_bytes += SliceBytes(layouts[c].outputs[o], graph.tensor(op.outputs[o]).dtype);
    }
  if (!stack.fuse_cross_entropy)
    for (size_t c = 0; c < graph.operators().size(); ++c) {
      const Operator& op = graph.op(static_cast<int>(c));
      if (op.type != "CrossEntropyLoss" || op.OnHost()) continue;
      // Over the E logits of the slice: forward the cast to float32 (write
      // 4E), max (read 4E), subtract, exp, divide in place (read and write
      // 8E each) and sum (read 4E); backward the multiply in place (8E) and
      // the cast back (read 4E, write b E). Its work counts a read of the
      // logits forward (b E) and twice that backward.
      const double e = static_cast<double>(ElementCount(layouts[c].inputs[0].SliceShape()));
      const double b = static_cast<double>(DTypeBytes(graph.tensor(op.inputs[0]).dtype));
      fused[c].extra_forward_bytes = 36 * e;
      fused[c].extra_backward_bytes = std::max(0.0, 12 * e - b * e);
    }
  if (stack.fuse_elementwise) FuseElementwiseChains(graph, layouts, fused);
  for (FusedKernel& f : fused) f.saved_backward_bytes = 2 * f.saved_forward_bytes;
  return fused;
}

bool Fp8FromNorm(const Graph& graph, const Operator& op) {
  if (!Fp8GemmDType(op, false) || op.inputs.empty()) return false;
  const Tensor& input = graph.tensor(op.inputs[0]);
  if (input.producer < 0) return false;
  const std::string& type = graph.op(input.producer).type;
  return type == "LayerNorm" || type == "RmsNorm";
}

double Fp8CastBytes(const Graph& graph, const std::vector<OpLayout>& layouts, int index, const SoftwareStack& stack,
                    bool backward, bool weight_gradient) {
  const Operator& op = graph.op(index);
  if (!Fp8GemmDType(op, backward) || op.OnHost()) return 0;
  const Tensor& tensor = graph.tensor(backward ? op.outputs[0] : op.inputs[0]);
  const bool from_norm = !backward && Fp8FromNorm(graph, op);
  // The slice the cast runs on: the output's gradient, the input as the GEMM
  // reads it, or the norm's own output, before any gather.
  const OpLayout& layout = layouts[static_cast<size_t>(index)];
  TensorLayout slice = backward ? layout.outputs[0] : layout.inputs[0];
  if (from_norm) {
    const Operator& norm = graph.op(tensor.producer);
    for (size_t o = 0; o < norm.outputs.size(); ++o)
      if (norm.outputs[o] == op.inputs[0]) slice = layouts[static_cast<size_t>(tensor.producer)].outputs[o];
  }
  const double b = static_cast<double>(DTypeBytes(tensor.dtype));
  const double copies = weight_gradient ? 2 : 1;
  const bool amax_pass = stack.fp8_scaling == Fp8Scaling::kCurrent;
  const double per_element = from_norm && !amax_pass ? std::max(0.0, 1 + copies - b) : b + copies + (amax_pass ? b : 0);
  return static_cast<double>(ElementCount(slice.SliceShape())) * per_element;
}

}  // namespace shardlab
