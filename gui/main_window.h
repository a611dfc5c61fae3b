// The main window: a run file opened from the menu (or the command line),
// simulated analytically, its pipeline timeline and strategy table in tabs;
// export of the pipeline view.
#pragma once

#include <QLabel>
#include <QMainWindow>

#include "gui/pipeline_view.h"
#include "gui/strategy_view.h"

namespace shardlab::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  MainWindow();
  // Throws the loader's errors (file, JSON path, what was expected).
  void OpenRun(const QString& path);
  PipelineView* pipeline() const { return pipeline_; }
  StrategyView* strategies() const { return strategies_; }

 private:
  void ChooseRun();
  void ChooseExport();

  PipelineView* pipeline_;
  StrategyView* strategies_;
  QLabel* status_;
};

}  // namespace shardlab::gui
