#include "gui/main_window.h"

#include <QFileDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>

#include "gui/export.h"
#include "gui/run_loader.h"

namespace shardlab::gui {

MainWindow::MainWindow()
    : pipeline_(new PipelineView(this)), strategies_(new StrategyView(this)), status_(new QLabel(this)) {
  setWindowTitle("shardlab");
  auto* tabs = new QTabWidget(this);
  tabs->addTab(pipeline_, "Pipeline");
  tabs->addTab(strategies_, "Strategies");
  setCentralWidget(tabs);
  statusBar()->addWidget(status_);
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open run...", QKeySequence::Open, this, &MainWindow::ChooseRun);
  file->addAction("&Export view...", QKeySequence::Save, this, &MainWindow::ChooseExport);
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
  resize(pipeline_->sizeHint());
}

void MainWindow::OpenRun(const QString& path) {
  const RunSpec run = LoadRunFile(path.toStdString());
  RunView view = SimulateForView(run);
  const StepResult& result = view.result;
  pipeline_->SetTimeline(BuildTimeline(result));
  strategies_->SetRows(std::move(view.strategies));
  setWindowTitle(QString("shardlab - %1").arg(QString::fromStdString(run.name)));
  status_->setText(QString("%1: %2 devices, %3 stages, step %4 s (analytical)")
                       .arg(QString::fromStdString(run.name))
                       .arg(run.parallel.device_num)
                       .arg(run.parallel.pipeline_stages)
                       .arg(result.step_seconds, 0, 'g', 5));
}

void MainWindow::ChooseRun() {
  const QString path = QFileDialog::getOpenFileName(this, "Open run", QString(), "Run files (*.json)");
  if (path.isEmpty()) return;
  try {
    OpenRun(path);
  } catch (const std::exception& e) {
    QMessageBox::critical(this, "shardlab", QString::fromStdString(e.what()));
  }
}

void MainWindow::ChooseExport() {
  const QString path = QFileDialog::getSaveFileName(this, "Export view", QString(), "PNG (*.png);;SVG (*.svg)");
  if (path.isEmpty()) return;
  try {
    ExportView(*pipeline_, path);
  } catch (const std::exception& e) {
    QMessageBox::critical(this, "shardlab", QString::fromStdString(e.what()));
  }
}

}  // namespace shardlab::gui
