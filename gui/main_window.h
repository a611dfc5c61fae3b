// The main window: a run file or result.json opened from the menu (or the
// command line); its pipeline timeline, strategy table, device matrix, tensor
// map, memory per stage and link utilisation in tabs, linked by one selection (an operator and
// one of its tensors); a side panel that edits the parallel settings and runs
// the simulation on a worker; a compare tab for any number of results; export
// of the visible view.
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QMainWindow>
#include <QTabWidget>
#include <QTimer>
#include <functional>
#include <memory>

#include "gui/communication_view.h"
#include "gui/compare_view.h"
#include "gui/device_matrix_view.h"
#include "gui/memory_view.h"
#include "gui/pipeline_view.h"
#include "gui/run_loader.h"
#include "gui/run_panel.h"
#include "gui/selection.h"
#include "gui/simulation_worker.h"
#include "gui/strategy_view.h"
#include "gui/tensor_map_view.h"

namespace shardlab::gui {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  MainWindow();
  // Throws the loader's errors (file, JSON path, what was expected).
  void OpenRun(const QString& path);
  // Shows a view (from a file, or a simulation the panel ran).
  void ShowView(std::shared_ptr<RunView> view);
  // Loads another run or result and adds it to the compare tab (after the current one, when the tab is empty).
  void CompareWith(const QString& path);
  // Runs the panel's settings on the worker.
  void RunFromPanel();

  const RunView* view() const { return view_.get(); }
  Selection* selection() const { return selection_; }
  PipelineView* pipeline() const { return pipeline_; }
  StrategyView* strategies() const { return strategies_; }
  DeviceMatrixView* devices() const { return devices_; }
  TensorMapView* tensor_map() const { return tensor_map_; }
  MemoryView* memory() const { return memory_; }
  CommunicationView* communication() const { return communication_; }
  CompareView* compare() const { return compare_; }
  RunPanel* panel() const { return panel_; }
  SimulationWorker* worker() const { return worker_; }
  QComboBox* tensor_choice() const { return tensor_choice_; }
  QComboBox* outline_choice() const { return outline_choice_; }
  QTabWidget* tabs() const { return tabs_; }

 private:
  // Asks for a file (to open, or to save when `save`) and hands it to `use`; errors become a message box.
  void WithFile(const QString& title, bool save, const QString& filter, const std::function<void(const QString&)>& use);
  void OnSelection(int op, int tensor);

  std::shared_ptr<RunView> view_;  // the views point into it
  Selection* selection_;
  QTabWidget* tabs_;
  PipelineView* pipeline_;
  StrategyView* strategies_;
  DeviceMatrixView* devices_;
  TensorMapView* tensor_map_;
  MemoryView* memory_;
  CommunicationView* communication_;
  CompareView* compare_;
  QComboBox* tensor_choice_;
  QComboBox* outline_choice_;
  RunPanel* panel_;
  SimulationWorker* worker_;
  QTimer* ticker_;
  double run_started_ = 0;
  QString run_summary_;  // the keys the running edit changed
  QLabel* status_;
};

}  // namespace shardlab::gui
