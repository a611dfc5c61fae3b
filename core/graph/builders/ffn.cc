// The feed-forward network of the seeds' sharding-propagation example: five
// Dense layers on flattened 28x28 MNIST images, with the example's strategies
// on dense1 ((2,4),(4,1)) and dense3 ((1,8),(8,1)) when `seed_strategies` is on.
#include "core/graph/builders/model_builder.h"
#include "core/graph/graph_builder.h"

namespace shardlab {
namespace {

Graph BuildFfn(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options) {
  if (options.pipeline_stages > 1) throw GraphError("the ffn builder does not split into pipeline stages");
  const int64_t batch = params.Int("batch");
  const bool seed_strategies = params.Bool("seed_strategies");
  GraphBuilder b(graph_name);
  const int images = b.Input("images", {batch, 1, 28, 28}, DType::kFloat32);
  const int labels = b.Input("labels", {batch}, DType::kInt32);
  int x = b.Flatten("flatten", images);
  const int64_t dims[] = {512, 256, 128, 64, 10};
  for (size_t i = 0; i < std::size(dims); ++i) {
    const std::string name = "dense" + std::to_string(i + 1);
    GraphBuilder::OptStrategy strategy;
    if (seed_strategies && i == 0) strategy = Strategy{{2, 4}, {4, 1}};
    if (seed_strategies && i == 2) strategy = Strategy{{1, 8}, {8, 1}};
    // Weights are [in, out] so the seed's strategies read as written.
    const int w = b.Parameter(name + ".weight", {b.shape(x)[1], dims[i]}, DType::kFloat32);
    const int bias = b.Parameter(name + ".bias", {dims[i]}, DType::kFloat32);
    x = b.BiasAdd(name + ".bias_add", b.MatMul(name, x, w, false, false, strategy), bias);
    if (i + 1 < std::size(dims)) x = b.Activation("ReLU", name + "_relu", x);
  }
  const int onehot = b.OneHot("loss/onehot", labels, 10, DType::kFloat32);
  const int loss = b.SoftmaxCrossEntropy("loss/cross_entropy", x, onehot);
  b.Reduce("ReduceMean", "loss/mean", loss, {}, false);
  return b.Finish();
}

}  // namespace

ModelBuilder FfnBuilder() {
  return {"ffn",
          "five-layer feed-forward network of the sharding-propagation example",
          {
              {"batch", int64_t{32}, "samples per micro-batch (set by a run)", 1, 1 << 24},
              {"seed_strategies", true, "put the example's shard strategies on dense1 and dense3"},
          },
          &BuildFfn};
}

}  // namespace shardlab
