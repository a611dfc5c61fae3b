// shardlab-gui: opens a run file and shows its pipeline timeline.
//   shardlab-gui [RUN.json]
//   shardlab-gui --screenshot out.png|out.svg [--view pipeline] RUN.json   (headless)
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
  parser.addOption({"view", "the view to render: pipeline", "view", "pipeline"});
  parser.process(app);
  const QStringList args = parser.positionalArguments();
  shardlab::gui::MainWindow window;
  try {
    if (parser.value("view") != "pipeline")
      throw std::runtime_error("--view " + parser.value("view").toStdString() + ": only the pipeline view exists yet");
    if (!args.isEmpty()) window.OpenRun(args.first());
    if (parser.isSet("screenshot")) {
      if (args.isEmpty()) throw std::runtime_error("--screenshot needs a run file");
      shardlab::gui::PipelineView* view = window.pipeline();
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
