// ResNet-50 (v1.5, stride on the 3x3 convolution, as MindSpore's model zoo
// builds it) on NCHW images, trained with softmax cross-entropy over 1000
// classes. Data parallel by default: MindSpore's usual way to train it.
#include "core/graph/builders/model_builder.h"
#include "core/graph/graph_builder.h"

namespace shardlab {
namespace {

struct ResNetContext {
  GraphBuilder& b;
  DType dtype;
};

int ConvBn(ResNetContext& c, const std::string& name, int x, int64_t out_channels, int64_t kernel, int64_t stride,
           bool relu) {
  GraphBuilder& b = c.b;
  const int64_t in_channels = b.shape(x)[1];
  const int w = b.Parameter(name + ".weight", {out_channels, in_channels, kernel, kernel}, c.dtype);
  int y = b.Conv2D(name, x, w, stride, kernel / 2);
  const Shape channel = {out_channels};
  const int gamma = b.Parameter(name + "_bn.gamma", channel, DType::kFloat32);
  const int beta = b.Parameter(name + "_bn.beta", channel, DType::kFloat32);
  const int mean = b.Parameter(name + "_bn.moving_mean", channel, DType::kFloat32, false);
  const int var = b.Parameter(name + "_bn.moving_variance", channel, DType::kFloat32, false);
  y = b.BatchNorm(name + "_bn", y, gamma, beta, mean, var);
  return relu ? b.Activation("ReLU", name + "_relu", y) : y;
}

int Bottleneck(ResNetContext& c, const std::string& name, int x, int64_t width, int64_t stride) {
  const int64_t out_channels = 4 * width;
  int y = ConvBn(c, name + "/conv1", x, width, 1, 1, true);
  y = ConvBn(c, name + "/conv2", y, width, 3, stride, true);
  y = ConvBn(c, name + "/conv3", y, out_channels, 1, 1, false);
  int shortcut = x;
  if (stride != 1 || c.b.shape(x)[1] != out_channels)
    shortcut = ConvBn(c, name + "/downsample", x, out_channels, 1, stride, false);
  y = c.b.Binary("Add", name + "/add", y, shortcut);
  return c.b.Activation("ReLU", name + "/relu", y);
}

Graph BuildResNet50(const std::string& graph_name, const BuilderParams& params, const BuildOptions& options) {
  if (options.pipeline_stages > 1) throw GraphError("the resnet50 builder does not split into pipeline stages");
  const int64_t batch = params.Int("batch");
  const int64_t image = params.Int("image_size");
  const int64_t classes = params.Int("num_classes");
  const DType dtype = *ParseDType(params.String("dtype"));
  GraphBuilder b(graph_name);
  ResNetContext c{b, dtype};
  const int images = b.Input("images", {batch, 3, image, image}, dtype);
  const int labels = b.Input("labels", {batch}, DType::kInt32);
  int x = ConvBn(c, "conv1", images, 64, 7, 2, true);
  x = b.Pool("MaxPool", "maxpool", x, 3, 2, 1);
  const int64_t blocks[] = {3, 4, 6, 3};
  const int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      x = Bottleneck(c, "layer" + std::to_string(stage + 1) + "/block" + std::to_string(i), x, widths[stage], stride);
    }
  }
  const int64_t spatial = b.shape(x)[2];
  x = b.Pool("AvgPool", "avgpool", x, spatial, 1, 0);
  x = b.Flatten("flatten", x);
  const int w = b.Parameter("fc.weight", {classes, b.shape(x)[1]}, dtype);
  const int bias = b.Parameter("fc.bias", {classes}, dtype);
  int logits = b.BiasAdd("fc.bias_add", b.MatMul("fc", x, w, false, true), bias);
  logits = b.Cast("fc/cast", logits, DType::kFloat32);
  const int onehot = b.OneHot("loss/onehot", labels, classes, DType::kFloat32);
  const int loss = b.SoftmaxCrossEntropy("loss/cross_entropy", logits, onehot);
  b.Reduce("ReduceMean", "loss/mean", loss, {}, false);
  return b.Finish();
}

}  // namespace

ModelBuilder ResNet50Builder() {
  return {"resnet50",
          "ResNet-50 v1.5 image classifier",
          {
              {"batch", int64_t{32}, "images per micro-batch (set by a run)", 1, 1 << 24},
              {"image_size", int64_t{224}, "input height and width", 32, 4096},
              {"num_classes", int64_t{1000}, "output classes", 1, 1 << 20},
              {"dtype", std::string("float16"), "compute dtype", 0, 0, {"float16", "bfloat16", "float32"}},
          },
          &BuildResNet50};
}

}  // namespace shardlab
