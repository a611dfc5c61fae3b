// shardlab-gui: opens a run file and shows its pipeline timeline and strategies.
//   shardlab-gui [RUN.json]
//   shardlab-gui --screenshot out.png|out.svg [--view pipeline|strategy] RUN.json   (headless)
#include <QApplication>
#include <QCommandLineParser>
#include <cstdlib>
#include <iostream>

#include "gui/export.h"
#include "gui/main_window.h"

int main(int argc, char** argv) {
  // Headless rendering needs no display.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--screenshot" && !std::getenv("QT_QPA_PLATFORM"))
      setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);
  QApplication::setApplicationName("shardlab-gui");
  QCommandLineParser parser;
  parser.setApplicationDescription("shardlab's viewer: pipeline timelines of simulated training steps");
  parser.addHelpOption();
  parser.addPositionalArgument("run", "run file (JSON)");
  parser.addOption({"screenshot", "render the view to this .png or .svg and exit", "file"});
  parser.addOption({"view", "the view to render: pipeline or strategy", "view", "pipeline"});
  parser.process(app);
  const QStringList args = parser.positionalArguments();
  shardlab::gui::MainWindow window;
  try {
    const QString view_name = parser.value("view");
    if (view_name != "pipeline" && view_name != "strategy")
      throw std::runtime_error("--view " + view_name.toStdString() +
                               ": pipeline or strategy (the device-matrix and tensor-map views do not exist yet)");
    if (!args.isEmpty()) window.OpenRun(args.first());
    if (parser.isSet("screenshot")) {
      if (args.isEmpty()) throw std::runtime_error("--screenshot needs a run file");
      QWidget* view = view_name == "strategy" ? static_cast<QWidget*>(window.strategies()) : window.pipeline();
      view->resize(view->sizeHint());
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
