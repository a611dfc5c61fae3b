// shardlab-gui: opens a run file or a result.json and shows its pipeline
// timeline, strategies, device matrices and tensor maps.
//   shardlab-gui [RUN.json|RESULT.json]
//   shardlab-gui --screenshot out.png|out.svg [--view pipeline|devices|tensor|memory|links|strategy]
//                [--op NAME] [--tensor N] [--outline K] [--size WxH] RUN.json   (headless)
#include <QApplication>
#include <QCommandLineParser>
#include <cstdlib>
#include <iostream>

#include "core/util/suggest.h"
#include "gui/export.h"
#include "gui/main_window.h"

namespace {

// The operator named `name` in the window's view; throws naming the closest one.
int OperatorNamed(const shardlab::gui::MainWindow& window, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& op : window.view()->layouts.ops) {
    if (op.name == name) return op.index;
    names.push_back(op.name);
  }
  throw std::runtime_error("--op " + name + ": no such operator" + shardlab::DidYouMean(name, names));
}

}  // namespace

// Whether Qt can open a window here: a platform chosen, or an X or Wayland display.
bool HasDisplay() {
  for (const char* variable : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"})
    if (const char* v = std::getenv(variable); v && *v) return true;
  return false;
}

int main(int argc, char** argv) {
  // Headless rendering and help need no display.
  bool headless = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    headless =
        headless || arg == "--screenshot" || arg == "--help" || arg == "-h" || arg == "--help-all" || arg == "-?";
  }
  if (headless && !std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  if (!HasDisplay()) {
    std::cerr << "shardlab-gui: error: no display to open a window on (set DISPLAY, or render headless with "
                 "--screenshot FILE)\n";
    return 1;
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("shardlab-gui");
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "shardlab's viewer: pipeline timelines, strategies, device matrices and tensor maps of simulated steps");
  parser.addHelpOption();
  parser.addPositionalArgument("file", "run file or result.json (JSON)");
  parser.addOption({"screenshot", "render the view to this .png or .svg and exit", "file"});
  parser.addOption(
      {"view", "the view to render: pipeline, devices, tensor, memory, links or strategy", "view", "pipeline"});
  parser.addOption({"op", "the operator the devices and tensor views show (default: a sharded MatMul)", "name"});
  parser.addOption({"tensor", "which of the operator's tensors (0 = first input; default: the most split)", "index"});
  parser.addOption({"outline", "devices view: -1 none, 0 same slice, k the k-th communication group", "k", "-1"});
  parser.addOption({"size", "the rendered view's size in pixels (default: the view's own)", "WIDTHxHEIGHT"});
  parser.process(app);
  const QStringList args = parser.positionalArguments();
  shardlab::gui::MainWindow window;
  try {
    const QString view_name = parser.value("view");
    if (view_name != "pipeline" && view_name != "strategy" && view_name != "devices" && view_name != "tensor" &&
        view_name != "memory" && view_name != "links")
      throw std::runtime_error("--view " + view_name.toStdString() +
                               ": pipeline, devices, tensor, memory, links or strategy");
    if (!args.isEmpty()) window.OpenRun(args.first());
    if (parser.isSet("op")) {
      if (args.isEmpty()) throw std::runtime_error("--op needs a run file");
      const int op = OperatorNamed(window, parser.value("op").toStdString());
      window.selection()->Select(op, shardlab::gui::DefaultTensor(window.view()->layouts.ops[op]));
    }
    if (parser.isSet("tensor")) window.selection()->Select(window.selection()->op(), parser.value("tensor").toInt());
    if (parser.isSet("screenshot")) {
      if (args.isEmpty()) throw std::runtime_error("--screenshot needs a run file");
      // The window's views live inside its tabs and dock; render standalone copies at their own size.
      const shardlab::gui::RunView& shown = *window.view();
      const int op = window.selection()->op(), tensor = window.selection()->tensor();
      shardlab::gui::PipelineView pipeline;
      pipeline.SetTimeline(shown.timeline);
      shardlab::gui::StrategyView strategies;
      strategies.SetRows(shown.strategies);
      shardlab::gui::DeviceMatrixView devices;
      devices.SetLayouts(&shown.layouts);
      devices.Show(op, tensor);
      devices.SetOutline(parser.value("outline").toInt());
      shardlab::gui::TensorMapView tensor_map;
      tensor_map.SetLayouts(&shown.layouts);
      tensor_map.Show(op, tensor);
      shardlab::gui::MemoryView memory;
      memory.SetResult(shown.result, shown.run.cluster.device.memory_bytes);
      shardlab::gui::CommunicationView links;
      links.SetResult(shown.result);
      QWidget* view = &pipeline;
      if (view_name == "strategy") view = &strategies;
      if (view_name == "devices") view = &devices;
      if (view_name == "tensor") view = &tensor_map;
      if (view_name == "memory") view = &memory;
      if (view_name == "links") view = &links;
      view->resize(view->sizeHint());
      if (parser.isSet("size")) {
        const QStringList wh = parser.value("size").split('x');
        const int w = wh.size() == 2 ? wh[0].toInt() : 0, h = wh.size() == 2 ? wh[1].toInt() : 0;
        if (w < 200 || h < 150 || w > 10000 || h > 10000)
          throw std::runtime_error("--size " + parser.value("size").toStdString() +
                                   ": expected WIDTHxHEIGHT in pixels, from 200x150 to 10000x10000");
        view->resize(w, h);
      }
      shardlab::gui::ExportView(*view, parser.value("screenshot"));
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "shardlab-gui: error: " << e.what() << "\n";
    return 1;
  }
  window.show();
  return app.exec();
}
