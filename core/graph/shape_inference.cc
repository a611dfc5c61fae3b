#include "core/graph/shape_inference.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/graph/fp8_format.h"
#include "core/graph/op_types.h"
#include "core/util/quote.h"
#include "core/util/suggest.h"

namespace shardlab {
namespace {

[[noreturn]] void Fail(const Operator& op, const std::string& message) {
  throw GraphError(fmt::format("operator \"{}\" ({}): {}", op.name, op.type, message));
}

std::string Str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

void RequireRank(const Operator& op, const TensorType& t, size_t min_rank, size_t max_rank, const char* what) {
  if (t.shape.size() < min_rank || t.shape.size() > max_rank)
    Fail(op, fmt::format("{} must have {}..{} dimensions, got {}", what, min_rank, max_rank, Str(t.shape)));
}

DType DTypeAttr(const Operator& op, DType fallback) {
  if (!op.Has("dtype")) return fallback;
  const std::string name = op.StringAttr("dtype", "");
  auto dtype = ParseDType(name);
  if (!dtype) Fail(op, "unknown dtype \"" + name + "\"");
  return *dtype;
}

TensorType InferMatMul(const Operator& op, const TensorType& a, const TensorType& b, bool batched) {
  const std::string fp8 = op.StringAttr("fp8_format", "off");
  if (!FindFp8Format(fp8))
    Fail(op, fmt::format("unknown fp8_format \"{}\" (expected one of {})", fp8, fmt::join(Fp8FormatNames(), ", ")));
  const bool ta = op.BoolAttr("transpose_a", false);
  const bool tb = op.BoolAttr("transpose_b", false);
  // MatMul takes leading dimensions as batch dimensions too (MindSpore's
  // MatMulInfo and BatchMatMulInfo share one rule); BatchMatMul needs them.
  RequireRank(op, a, 2, 8, "input a");
  RequireRank(op, b, 2, 8, "input b");
  if (batched && a.shape.size() < 3 && b.shape.size() < 3) Fail(op, "BatchMatMul needs an input with batch dimensions");
  const size_t ra = a.shape.size(), rb = b.shape.size();
  const int64_t m = ta ? a.shape[ra - 1] : a.shape[ra - 2];
  const int64_t ka = ta ? a.shape[ra - 2] : a.shape[ra - 1];
  const int64_t kb = tb ? b.shape[rb - 1] : b.shape[rb - 2];
  const int64_t n = tb ? b.shape[rb - 2] : b.shape[rb - 1];
  if (ka != kb)
    Fail(op, fmt::format("reduction dimensions differ: {} x {} (transpose_a={}, transpose_b={})", Str(a.shape),
                         Str(b.shape), ta, tb));
  Shape batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  auto batch = BroadcastShapes(batch_a, batch_b);
  if (!batch) Fail(op, fmt::format("batch dimensions {} and {} do not broadcast", Str(batch_a), Str(batch_b)));
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  return {out, a.dtype};
}

void RequireIndices(const Operator& op, const TensorType& t, const char* what) {
  if (t.dtype != DType::kInt32 && t.dtype != DType::kInt64) Fail(op, fmt::format("{} must be int32 or int64", what));
}

// MoeDispatch(x, expert_ids): x [groups, tokens, hidden] and the experts each
// token is routed to, [groups, tokens, k], give every expert its tokens of
// each group in `capacity` slots: [groups, expert_num, capacity, hidden].
TensorType InferMoeDispatch(const Operator& op, const TensorType& x, const TensorType& ids) {
  RequireRank(op, x, 3, 3, "x [groups, tokens, hidden]");
  RequireRank(op, ids, 3, 3, "expert_ids [groups, tokens, k]");
  RequireIndices(op, ids, "expert_ids");
  if (ids.shape[0] != x.shape[0] || ids.shape[1] != x.shape[1])
    Fail(op, fmt::format("expert_ids {} must route the groups and tokens of x {}", Str(ids.shape), Str(x.shape)));
  const int64_t experts = op.IntAttr("expert_num", 0), capacity = op.IntAttr("capacity", 0);
  if (experts < 1 || capacity < 1) Fail(op, "expert_num and capacity must be >= 1");
  return {{x.shape[0], experts, capacity, x.shape[2]}, x.dtype};
}

// MoeCombine(y, expert_ids, weights): the experts' outputs [groups,
// expert_num, capacity, hidden] summed back per token, each weighted by its
// router probability: [groups, tokens, hidden].
TensorType InferMoeCombine(const Operator& op, const TensorType& y, const TensorType& ids, const TensorType& weights) {
  RequireRank(op, y, 4, 4, "expert outputs [groups, experts, capacity, hidden]");
  RequireRank(op, ids, 3, 3, "expert_ids [groups, tokens, k]");
  RequireIndices(op, ids, "expert_ids");
  if (weights.shape != ids.shape)
    Fail(op, fmt::format("weights {} must have the shape of expert_ids {}", Str(weights.shape), Str(ids.shape)));
  if (ids.shape[0] != y.shape[0])
    Fail(op, fmt::format("expert_ids {} and expert outputs {} differ in groups", Str(ids.shape), Str(y.shape)));
  return {{y.shape[0], ids.shape[1], y.shape[3]}, y.dtype};
}

// FlashAttentionScore(query, key, value) in MindSpore's BNSD or BSND
// layout: query [batch, heads, seq, head_dim] (BNSD), key and value [batch,
// kv_heads, kv_seq, head_dim] with heads a multiple of kv_heads
// (grouped-query attention).
TensorType InferFlashAttention(const Operator& op, const TensorType& q, const TensorType& k, const TensorType& v) {
  const std::string layout = op.StringAttr("input_layout", "BNSD");
  if (layout != "BNSD" && layout != "BSND")
    Fail(op, fmt::format("input_layout \"{}\" is not supported: BNSD or BSND", layout));
  const AttentionDims a = FlashAttentionDims(op);
  RequireRank(op, q, 4, 4, ("query (" + layout + ")").c_str());
  RequireRank(op, k, 4, 4, ("key (" + layout + ")").c_str());
  RequireRank(op, v, 4, 4, ("value (" + layout + ")").c_str());
  if (k.shape[a.batch] != v.shape[a.batch] || k.shape[a.heads] != v.shape[a.heads] || k.shape[a.seq] != v.shape[a.seq])
    Fail(op, fmt::format("key {} and value {} must agree on batch, heads and sequence (only head_dim may differ)",
                         Str(k.shape), Str(v.shape)));
  if (q.shape[a.batch] != k.shape[a.batch] || q.shape[a.head_dim] != k.shape[a.head_dim])
    Fail(op, fmt::format("query {} and key {} must agree on batch and head_dim", Str(q.shape), Str(k.shape)));
  if (q.shape[a.heads] % k.shape[a.heads] != 0)
    Fail(op,
         fmt::format("query heads {} are not a multiple of key/value heads {}", q.shape[a.heads], k.shape[a.heads]));
  if (op.IntAttr("head_num", q.shape[a.heads]) != q.shape[a.heads])
    Fail(op, fmt::format("head_num {} differs from the query's {} heads", op.IntAttr("head_num", 0), q.shape[a.heads]));
  const int64_t mode = op.IntAttr("sparse_mode", 0);
  if (mode != 0 && mode != 2 && mode != 3)
    Fail(op, fmt::format("sparse_mode {} is not supported: 0 (no mask), 2 or 3 (causal)", mode));
  const double keep = op.NumberAttr("keep_prob", 1.0);
  if (!(keep > 0 && keep <= 1)) Fail(op, fmt::format("keep_prob must be in (0, 1], got {}", keep));
  // The context has the value's head_dim (multi-head latent attention: 128 against the query's 192).
  Shape out = q.shape;
  out[a.head_dim] = v.shape[a.head_dim];
  return {out, q.dtype};
}

int64_t WindowOutput(const Operator& op, int64_t size, int64_t kernel, int64_t stride, int64_t pad) {
  if (kernel < 1 || stride < 1 || pad < 0) Fail(op, "kernel and stride must be >= 1 and pad >= 0");
  const int64_t span = size + 2 * pad - kernel;
  if (span < 0) Fail(op, fmt::format("window {} is larger than the padded input {}", kernel, size + 2 * pad));
  return span / stride + 1;
}

}  // namespace

std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = std::max(da, db);
  }
  return out;
}

std::optional<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> NormalizedAxes(const Operator& op, int64_t rank, std::vector<int64_t> fallback) {
  std::vector<int64_t> axes = op.IntsAttr("axis");
  if (axes.empty()) axes = std::move(fallback);
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (auto& axis : axes) {
    auto normalized = NormalizeAxis(axis, rank);
    if (!normalized) Fail(op, fmt::format("axis {} is out of range for rank {}", axis, rank));
    axis = *normalized;
  }
  return axes;
}

std::vector<TensorType> InferOutputs(const Operator& op, const std::vector<TensorType>& in) {
  const OpTypeInfo* type = FindOpType(op.type);
  if (!type) Fail(op, "unknown type \"" + op.type + "\"" + DidYouMean(op.type, OpTypeNames()));
  const int arity = static_cast<int>(in.size());
  if (arity < type->min_inputs || arity > type->max_inputs)
    Fail(op, fmt::format("takes {}{} input{}, got {}", type->min_inputs,
                         type->max_inputs != type->min_inputs ? ".." + std::to_string(type->max_inputs) : "",
                         type->max_inputs == 1 ? "" : "s", arity));
  for (const auto& attr : op.attrs) {
    const std::string& name = attr.first;
    if (name == "primitive_target" || std::find(type->attrs.begin(), type->attrs.end(), name) != type->attrs.end())
      continue;
    Fail(op, fmt::format("unknown attribute {}{}; {} takes {}", Quoted(name), DidYouMean(name, type->attrs), op.type,
                         type->attrs.empty() ? "only primitive_target"
                                             : fmt::format("{} and primitive_target", fmt::join(type->attrs, ", "))));
  }
  const std::string& t = op.type;
  if (t == "MatMul") return {InferMatMul(op, in[0], in[1], false)};
  if (t == "BatchMatMul") return {InferMatMul(op, in[0], in[1], true)};
  if (t == "Add" || t == "Sub" || t == "Mul" || t == "RealDiv" || t == "Maximum" || t == "Minimum") {
    auto shape = BroadcastShapes(in[0].shape, in[1].shape);
    if (!shape) Fail(op, fmt::format("shapes {} and {} do not broadcast", Str(in[0].shape), Str(in[1].shape)));
    return {{*shape, in[0].dtype}};
  }
  if (t == "BiasAdd") {
    RequireRank(op, in[0], 2, 5, "input");
    if (in[1].shape != Shape{in[0].shape[1]})
      Fail(op,
           fmt::format("bias {} must match the channel dimension (dim 1) of {}", Str(in[1].shape), Str(in[0].shape)));
    return {in[0]};
  }
  if (t == "ReLU" || t == "GeLU" || t == "FastGeLU" || t == "Tanh" || t == "Sigmoid" || t == "SiLU") return {in[0]};
  if (t == "Cast") return {{in[0].shape, DTypeAttr(op, in[0].dtype)}};
  if (t == "Dropout") {
    const double keep = op.NumberAttr("keep_prob", 0.9);
    if (!(keep > 0 && keep <= 1)) Fail(op, fmt::format("keep_prob must be in (0, 1], got {}", keep));
    return {in[0]};
  }
  if (t == "Softmax" || t == "LogSoftmax") {
    NormalizedAxes(op, static_cast<int64_t>(in[0].shape.size()), {-1});
    return {in[0]};
  }
  if (t == "LayerNorm") {
    const int64_t rank = static_cast<int64_t>(in[0].shape.size());
    auto begin = NormalizeAxis(op.IntAttr("begin_params_axis", -1), rank);
    if (!begin) Fail(op, "begin_params_axis is out of range");
    const Shape params(in[0].shape.begin() + *begin, in[0].shape.end());
    if (in[1].shape != params || in[2].shape != params)
      Fail(op, fmt::format("gamma {} and beta {} must have shape {}", Str(in[1].shape), Str(in[2].shape), Str(params)));
    return {in[0]};
  }
  if (t == "RmsNorm") {
    RequireRank(op, in[0], 1, 8, "input");
    if (in[1].shape != Shape{in[0].shape.back()})
      Fail(op, fmt::format("gamma {} must have shape [{}], the last dimension of {}", Str(in[1].shape),
                           in[0].shape.back(), Str(in[0].shape)));
    return {in[0]};
  }
  if (t == "RotaryPositionEmbedding") {
    RequireRank(op, in[0], 2, 8, "input");
    if (in[0].shape.back() % 2 != 0)
      Fail(op, fmt::format("the rotated dimension {} of {} must be even", in[0].shape.back(), Str(in[0].shape)));
    return {in[0]};
  }
  if (t == "FlashAttentionScore") return {InferFlashAttention(op, in[0], in[1], in[2])};
  if (t == "ReduceSum" || t == "ReduceMean" || t == "ReduceMax" || t == "ReduceMin") {
    const auto axes = NormalizedAxes(op, static_cast<int64_t>(in[0].shape.size()), {});
    const bool keep = op.BoolAttr("keep_dims", false);
    Shape out;
    for (size_t i = 0; i < in[0].shape.size(); ++i) {
      const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
      if (!reduced)
        out.push_back(in[0].shape[i]);
      else if (keep)
        out.push_back(1);
    }
    return {{out, in[0].dtype}};
  }
  if (t == "Gather") {
    if (in[1].dtype != DType::kInt32 && in[1].dtype != DType::kInt64) Fail(op, "indices must be int32 or int64");
    auto axis = NormalizeAxis(op.IntAttr("axis", 0), static_cast<int64_t>(in[0].shape.size()));
    if (!axis) Fail(op, "axis is out of range");
    Shape out(in[0].shape.begin(), in[0].shape.begin() + *axis);
    out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
    out.insert(out.end(), in[0].shape.begin() + *axis + 1, in[0].shape.end());
    return {{out, in[0].dtype}};
  }
  if (t == "Reshape") {
    const Shape shape = op.IntsAttr("shape");
    if (shape.empty() || ElementCount(shape) != ElementCount(in[0].shape) ||
        std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d < 1; }))
      Fail(op, fmt::format("cannot reshape {} to {}", Str(in[0].shape), Str(shape)));
    return {{shape, in[0].dtype}};
  }
  if (t == "Flatten") {
    RequireRank(op, in[0], 1, 8, "input");
    return {{{in[0].shape[0], ElementCount(in[0].shape) / in[0].shape[0]}, in[0].dtype}};
  }
  if (t == "SplitV") {
    const int64_t rank = static_cast<int64_t>(in[0].shape.size());
    const auto dim = NormalizeAxis(op.IntAttr("split_dim", 0), rank);
    if (!dim) Fail(op, "split_dim is out of range");
    const auto sizes = op.IntsAttr("size_splits");
    int64_t total = 0;
    for (int64_t size : sizes) {
      if (size < 1) Fail(op, "size_splits must be >= 1");
      total += size;
    }
    if (sizes.empty() || total != in[0].shape[*dim])
      Fail(op, fmt::format("size_splits {} must add up to dimension {} of {}", Str(sizes), *dim, Str(in[0].shape)));
    std::vector<TensorType> parts;
    for (int64_t size : sizes) {
      Shape shape = in[0].shape;
      shape[*dim] = size;
      parts.push_back({shape, in[0].dtype});
    }
    return parts;
  }
  if (t == "Concat") {
    const int64_t rank = static_cast<int64_t>(in[0].shape.size());
    const auto axis = NormalizeAxis(op.IntAttr("axis", 0), rank);
    if (!axis) Fail(op, "axis is out of range");
    Shape out = in[0].shape;
    for (size_t i = 1; i < in.size(); ++i) {
      Shape other = in[i].shape;
      if (other.size() != out.size() || in[i].dtype != in[0].dtype)
        Fail(op, fmt::format("input {} {} differs in rank or dtype from input 0 {}", i, Str(other), Str(in[0].shape)));
      other[*axis] = out[*axis];
      if (other != out)
        Fail(op, fmt::format("input {} {} differs from input 0 {} outside axis {}", i, Str(in[i].shape),
                             Str(in[0].shape), *axis));
      out[*axis] += in[i].shape[*axis];
    }
    return {{out, in[0].dtype}};
  }
  if (t == "BroadcastTo") {
    const Shape shape = op.IntsAttr("shape");
    bool fits = shape.size() == in[0].shape.size();
    for (size_t i = 0; fits && i < shape.size(); ++i) fits = in[0].shape[i] == shape[i] || in[0].shape[i] == 1;
    if (!fits)
      Fail(op, fmt::format("cannot broadcast {} to {}: dimensions must match or be 1", Str(in[0].shape), Str(shape)));
    return {{shape, in[0].dtype}};
  }
  if (t == "TopK") {
    RequireRank(op, in[0], 1, 8, "input");
    const int64_t k = op.IntAttr("k", 1);
    if (k < 1 || k > in[0].shape.back())
      Fail(op, fmt::format("k {} must be in 1..{}, the last dimension of {}", k, in[0].shape.back(), Str(in[0].shape)));
    Shape out = in[0].shape;
    out.back() = k;
    return {{out, in[0].dtype}, {out, DType::kInt32}};
  }
  if (t == "MoeDispatch") return {InferMoeDispatch(op, in[0], in[1])};
  if (t == "MoeCombine") return {InferMoeCombine(op, in[0], in[1], in[2])};
  if (t == "Transpose") {
    const auto perm = op.IntsAttr("perm");
    Shape sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int64_t>(i) || sorted.size() != in[0].shape.size())
        Fail(op, fmt::format("perm {} is not a permutation of the {} dimensions", Str(perm), in[0].shape.size()));
    Shape out;
    for (int64_t p : perm) out.push_back(in[0].shape[p]);
    return {{out, in[0].dtype}};
  }
  if (t == "OneHot") {
    const int64_t depth = op.IntAttr("depth", 0);
    if (depth < 1) Fail(op, "depth must be >= 1");
    if (op.IntAttr("axis", -1) != -1) Fail(op, "only axis -1 (the one-hot dimension last) is supported");
    Shape out = in[0].shape;
    out.push_back(depth);
    return {{out, DTypeAttr(op, DType::kFloat32)}};
  }
  if (t == "SoftmaxCrossEntropyWithLogits") {
    RequireRank(op, in[0], 2, 2, "logits");
    if (in[0].shape != in[1].shape) Fail(op, "logits and labels must have the same shape");
    return {{{in[0].shape[0]}, in[0].dtype}};
  }
  if (t == "CrossEntropyLoss") {
    RequireRank(op, in[0], 2, 2, "logits");
    if (in[1].shape != Shape{in[0].shape[0]}) Fail(op, "labels must be one class index per row of the logits");
    if (in[1].dtype != DType::kInt32 && in[1].dtype != DType::kInt64) Fail(op, "labels must be int32 or int64");
    return {{{in[0].shape[0]}, DType::kFloat32}};
  }
  if (t == "SigmoidCrossEntropyWithLogits") {
    if (in[0].shape != in[1].shape) Fail(op, "logits and labels must have the same shape");
    return {in[0]};
  }
  if (t == "Conv2D") {
    RequireRank(op, in[0], 4, 4, "input (NCHW)");
    RequireRank(op, in[1], 4, 4, "weight (OIHW)");
    const int64_t group = op.IntAttr("group", 1);
    if (group < 1 || in[0].shape[1] != in[1].shape[1] * group)
      Fail(op, fmt::format("input channels {} do not match weight {} with group {}", in[0].shape[1], Str(in[1].shape),
                           group));
    const int64_t stride = op.IntAttr("stride", 1), pad = op.IntAttr("pad", 0);
    return {{{in[0].shape[0], in[1].shape[0], WindowOutput(op, in[0].shape[2], in[1].shape[2], stride, pad),
              WindowOutput(op, in[0].shape[3], in[1].shape[3], stride, pad)},
             in[0].dtype}};
  }
  if (t == "MaxPool" || t == "AvgPool") {
    RequireRank(op, in[0], 4, 4, "input (NCHW)");
    const int64_t k = op.IntAttr("kernel_size", 1), s = op.IntAttr("stride", 1), p = op.IntAttr("pad", 0);
    return {{{in[0].shape[0], in[0].shape[1], WindowOutput(op, in[0].shape[2], k, s, p),
              WindowOutput(op, in[0].shape[3], k, s, p)},
             in[0].dtype}};
  }
  if (t == "BatchNorm") {
    RequireRank(op, in[0], 2, 4, "input");
    for (size_t i = 1; i < 5; ++i)
      if (in[i].shape != Shape{in[0].shape[1]})
        Fail(op, fmt::format("scale, bias, mean and variance must have shape [{}]", in[0].shape[1]));
    return {in[0]};
  }
  Fail(op, "no shape rule for this operator type");
}

AttentionDims FlashAttentionDims(const Operator& op) {
  if (op.StringAttr("input_layout", "BNSD") == "BSND") return {0, 2, 1, 3};
  return {};
}

}  // namespace shardlab
