// Repaint times of shardlab-gui's views at 4096 devices, rendered offscreen
// into an image (what a frame costs the paint code; no compositor):
// the pipeline timeline of GPT-3 175B on 4096 NPUs (16 stages, 32
// micro-batches), the device-matrix view of ResNet-50 data parallel over
// 4096 devices (aggregated at the default size, then zoomed to one cell per
// device, then with outlines), and the tensor-map view. Prints the median of
// 30 repaints per view.
#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gui/device_matrix_view.h"
#include "gui/pipeline_view.h"
#include "gui/run_loader.h"
#include "gui/tensor_map_view.h"

namespace {

double MedianRepaintMs(QWidget& w) {
  QImage image(w.size(), QImage::Format_ARGB32_Premultiplied);
  std::vector<double> ms;
  for (int i = 0; i < 30; ++i) {
    QElapsedTimer t;
    t.start();
    w.render(&image);
    ms.push_back(t.nsecsElapsed() / 1e6);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  setenv("QT_QPA_PLATFORM", "offscreen", 0);
  QApplication app(argc, argv);
  using namespace shardlab::gui;
  const std::string root = SHARDLAB_SOURCE_DIR;
  QElapsedTimer load;
  load.start();
  const RunView gpt = LoadForView(root + "/configs/runs/gpt3-175b-ascend-4096.json");
  std::printf("load and simulate GPT-3 175B on 4096 (analytical, with layouts): %.0f ms\n", load.elapsed() * 1.0);
  PipelineView pipeline;
  pipeline.SetTimeline(gpt.timeline);
  pipeline.resize(1400, pipeline.sizeHint().height());
  std::printf("pipeline view, GPT-3 4096 (16 stages, %zu spans on stage 0): %.2f ms per repaint\n",
              gpt.timeline.stages[0].compute.size(), MedianRepaintMs(pipeline));

  load.restart();
  const RunView resnet = LoadForView(root + "/configs/runs/resnet50-ascend-4096.json");
  std::printf("load and simulate ResNet-50 on 4096: %.0f ms\n", load.elapsed() * 1.0);
  DeviceMatrixView devices;
  devices.resize(1100, 800);
  devices.SetLayouts(&resnet.layouts);
  std::printf("devices view, 4096 devices at 1100x800: %lld cells of %lldx%lld devices: %.2f ms per repaint\n",
              static_cast<long long>(devices.CellCount()), static_cast<long long>(devices.BlockSize()),
              static_cast<long long>(devices.BlockSize()), MedianRepaintMs(devices));
  devices.resize(400, 300);
  std::printf("devices view, 4096 devices at 400x300: %lld cells of %lldx%lld devices: %.2f ms per repaint\n",
              static_cast<long long>(devices.CellCount()), static_cast<long long>(devices.BlockSize()),
              static_cast<long long>(devices.BlockSize()), MedianRepaintMs(devices));
  devices.SetZoom(4);
  std::printf("devices view, zoomed to one cell per device (%lld cells): %.2f ms per repaint\n",
              static_cast<long long>(devices.CellCount()), MedianRepaintMs(devices));
  devices.SetZoom(1);
  devices.resize(1100, 800);
  devices.SetOutline(0);
  std::printf("devices view, 4096 devices with slice outlines: %.2f ms per repaint\n", MedianRepaintMs(devices));
  DeviceMatrixView gpt_devices;
  gpt_devices.resize(1100, 800);
  gpt_devices.SetLayouts(&gpt.layouts);
  std::printf("devices view, GPT-3 stage of %lld devices (matrix of %zu dims): %.2f ms per repaint\n",
              static_cast<long long>(gpt_devices.CellCount()), gpt_devices.op()->device_matrix.size(),
              MedianRepaintMs(gpt_devices));
  TensorMapView tensor;
  tensor.resize(1100, 800);
  tensor.SetLayouts(&gpt.layouts);
  std::printf("tensor-map view, GPT-3 (%lld slices): %.2f ms per repaint\n",
              static_cast<long long>(tensor.Blocks() * tensor.SliceRows() * tensor.SliceCols()), MedianRepaintMs(tensor));
  TensorMapView resnet_tensor;
  resnet_tensor.resize(1100, 800);
  resnet_tensor.SetLayouts(&resnet.layouts);
  const QPoint centre(550, 400);
  QElapsedTimer tip;
  tip.start();
  const QString text = resnet_tensor.ToolTipAt(centre);
  std::printf("tensor-map view, ResNet-50 4096 (%lld slices): %.2f ms per repaint, tooltip %.2f ms\n",
              static_cast<long long>(resnet_tensor.Blocks() * resnet_tensor.SliceRows() * resnet_tensor.SliceCols()),
              MedianRepaintMs(resnet_tensor), tip.nsecsElapsed() / 1e6 + 0 * text.size());
  return 0;
}
