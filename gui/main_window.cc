#include "gui/main_window.h"

#include <QDateTime>
#include <QDockWidget>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabBar>
#include <QVBoxLayout>
#include <functional>
#include <utility>

#include "gui/export.h"

namespace shardlab::gui {
namespace {

QWidget* WithControls(QWidget* parent, const std::vector<std::pair<QString, QComboBox*>>& controls, QWidget* view) {
  auto* page = new QWidget(parent);
  auto* bar = new QHBoxLayout;
  for (const auto& [label, box] : controls) {
    bar->addWidget(new QLabel(label, page));
    bar->addWidget(box, 1);
  }
  auto* layout = new QVBoxLayout(page);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addWidget(view, 1);
  return page;
}

double Now() { return QDateTime::currentMSecsSinceEpoch() / 1e3; }

}  // namespace

MainWindow::MainWindow()
    : selection_(new Selection(this)),
      tabs_(new QTabWidget(this)),
      pipeline_(new PipelineView(this)),
      strategies_(new StrategyView(this)),
      devices_(new DeviceMatrixView(this)),
      tensor_map_(new TensorMapView(this)),
      memory_(new MemoryView(this)),
      communication_(new CommunicationView(this)),
      compare_(new CompareView(this)),
      tensor_choice_(new QComboBox(this)),
      outline_choice_(new QComboBox(this)),
      panel_(new RunPanel(this)),
      worker_(new SimulationWorker(this)),
      ticker_(new QTimer(this)),
      status_(new QLabel(this)) {
  setWindowTitle("shardlab");
  // Many stages: rows shrink to fit, then the timeline scrolls.
  auto* pipeline_scroll = new QScrollArea(this);
  pipeline_scroll->setWidgetResizable(true);
  pipeline_scroll->setWidget(pipeline_);
  pipeline_scroll->setFrameShape(QFrame::NoFrame);
  tabs_->addTab(pipeline_scroll, "Pipeline");
  tabs_->addTab(strategies_, "Strategies");
  tabs_->addTab(WithControls(this, {{"tensor", tensor_choice_}, {"outline", outline_choice_}}, devices_), "Devices");
  tabs_->addTab(tensor_map_, "Tensor map");
  tabs_->addTab(memory_, "Memory");
  tabs_->addTab(communication_, "Links");
  tabs_->addTab(compare_, "Compare");
  // A click on a tab gives the tab bar the focus, so the arrow keys then move between tabs.
  tabs_->tabBar()->setFocusPolicy(Qt::StrongFocus);
  setCentralWidget(tabs_);
  auto* dock = new QDockWidget("Run settings", this);
  dock->setWidget(panel_);
  addDockWidget(Qt::RightDockWidgetArea, dock);
  statusBar()->addWidget(status_);

  QMenu* file = menuBar()->addMenu("&File");
  const QString json = "Run files and results (*.json)";
  file->addAction("&Open run or result...", QKeySequence::Open, this, [this, json] {
    WithFile("Open run or result", false, json, [this](const QString& p) { OpenRun(p); });
  });
  file->addAction("&Compare with...", this, [this, json] {
    WithFile("Compare with", false, json, [this](const QString& p) { CompareWith(p); });
  });
  file->addAction("&Export view...", QKeySequence::Save, this, [this] {
    WithFile("Export view", true, "PNG (*.png);;SVG (*.svg)",
             [this](const QString& p) { ExportView(*tabs_->currentWidget(), p); });
  });
  file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);

  // One selection drives the views; the table and the timeline set it.
  connect(selection_, &Selection::changed, this, &MainWindow::OnSelection);
  auto select = [this](int op) { selection_->Select(op, DefaultTensor(view_->layouts.ops[op])); };
  connect(strategies_, &StrategyView::operatorSelected, this, select);
  connect(pipeline_, &PipelineView::operatorClicked, this, select);
  connect(tensor_choice_, &QComboBox::currentIndexChanged, this, [this](int t) {
    if (t >= 0) selection_->Select(selection_->op(), t);
  });
  connect(outline_choice_, &QComboBox::currentIndexChanged, this,
          [this](int i) { devices_->SetOutline(outline_choice_->itemData(i).toInt()); });

  connect(panel_, &RunPanel::runRequested, this, &MainWindow::RunFromPanel);
  connect(panel_, &RunPanel::cancelRequested, worker_, &SimulationWorker::Cancel);
  connect(ticker_, &QTimer::timeout, this, [this] { panel_->SetElapsed(Now() - run_started_); });
  connect(worker_, &SimulationWorker::finished, this, [this](std::shared_ptr<RunView> view) {
    ticker_->stop();
    panel_->SetBusy(false);
    panel_->SetMessage(QString("done in %1 s: step %2 s")
                           .arg(Now() - run_started_, 0, 'f', 1)
                           .arg(view->result.step_seconds, 0, 'g', 5));
    auto before = view_;
    ShowView(view);
    // The panel now edits the run it ran: its fields and files are this run's.
    panel_->SetRun(view_->run);
    if (!before) return;
    if (compare_->Results() == 0) compare_->Add(*before, "before the edit");
    compare_->Add(*view_, "edited: " + run_summary_);
  });
  connect(worker_, &SimulationWorker::failed, this, [this](const QString& message) {
    ticker_->stop();
    panel_->SetBusy(false);
    panel_->SetMessage("failed: " + message);
  });
  connect(worker_, &SimulationWorker::cancelled, this, [this] {
    ticker_->stop();
    panel_->SetBusy(false);
    panel_->SetMessage("cancelled");
  });
  resize(1400, 800);
}

void MainWindow::OpenRun(const QString& path) {
  auto view = std::make_shared<RunView>(LoadForView(path.toStdString()));
  ShowView(view);
  panel_->SetRun(view_->run);
}

void MainWindow::ShowView(std::shared_ptr<RunView> view) {
  // The views point into the old view until they are reset below.
  const std::shared_ptr<RunView> old = std::exchange(view_, std::move(view));
  const StepResult& result = view_->result;
  pipeline_->SetTimeline(view_->timeline);
  strategies_->SetRows(view_->strategies);
  devices_->SetLayouts(&view_->layouts);
  tensor_map_->SetLayouts(&view_->layouts);
  const RunSpec& run = view_->run;
  memory_->SetResult(result, run.cluster.device.memory_bytes);
  communication_->SetResult(result);
  status_->setText(QString("%1: %2 devices, %3 stages, step %4 s (%5%6)")
                       .arg(QString::fromStdString(run.name))
                       .arg(run.parallel.device_num)
                       .arg(run.parallel.pipeline_stages)
                       .arg(result.step_seconds, 0, 'g', 5)
                       .arg(QString::fromStdString(result.engine))
                       .arg(view_->from_result ? ", from " + QString::fromStdString(view_->source) : ""));
  const int op = view_->layouts.ops.empty() ? -1 : DefaultOperator(view_->layouts);
  selection_->Select(-1, 0);
  selection_->Select(op, op >= 0 ? DefaultTensor(view_->layouts.ops[op]) : 0);
}

void MainWindow::OnSelection(int op, int tensor) {
  devices_->Show(op, tensor);
  tensor_map_->Show(op, tensor);
  if (op >= 0) strategies_->SelectOperator(op);
  // The tensor and outline choices of this operator.
  const QSignalBlocker block_tensor(tensor_choice_), block_outline(outline_choice_);
  tensor_choice_->clear();
  outline_choice_->clear();
  if (!view_) return;
  // The title names the run and the selected operator.
  QString title = "shardlab - " + QString::fromStdString(view_->run.name);
  if (op >= 0 && op < static_cast<int>(view_->layouts.ops.size()))
    title += " - " + QString::fromStdString(view_->layouts.ops[op].name);
  setWindowTitle(title);
  if (op < 0 || op >= static_cast<int>(view_->layouts.ops.size())) return;
  const OperatorView& o = view_->layouts.ops[op];
  for (const TensorView& t : o.tensors) tensor_choice_->addItem(QString::fromStdString(t.role + ": " + t.name));
  tensor_choice_->setCurrentIndex(tensor);
  outline_choice_->addItem("none", -1);
  outline_choice_->addItem("devices holding the same slice", 0);
  for (size_t g = 0; g < o.groups.size(); ++g)
    outline_choice_->addItem(QString::fromStdString(o.groups[g].label), static_cast<int>(g) + 1);
  devices_->SetOutline(-1);
}

void MainWindow::RunFromPanel() {
  if (!view_) {
    panel_->SetMessage("open a run first (File > Open)");
    return;
  }
  try {
    const RunSpec edited = EditRun(view_->run, panel_->Changes());
    if (!worker_->Start(edited, panel_->ChosenEngine())) return;
    run_started_ = Now();
    run_summary_ = panel_->ChangeSummary();  // what was run, whatever is typed meanwhile
    panel_->SetBusy(true);
    panel_->SetMessage("");
    ticker_->start(100);
  } catch (const std::exception& e) {
    panel_->SetMessage(QString("not run: ") + e.what());
  }
}

void MainWindow::CompareWith(const QString& path) {
  if (!view_) throw std::runtime_error("open a run before comparing");
  const RunView other = LoadForView(path.toStdString());
  if (compare_->Results() == 0)
    compare_->Add(*view_, QString::fromStdString(view_->source.empty() ? view_->run.name : view_->source));
  compare_->Add(other, path);
  tabs_->setCurrentWidget(compare_);
}

void MainWindow::WithFile(const QString& title, bool save, const QString& filter,
                          const std::function<void(const QString&)>& use) {
  const QString path = save ? QFileDialog::getSaveFileName(this, title, QString(), filter)
                            : QFileDialog::getOpenFileName(this, title, QString(), filter);
  if (path.isEmpty()) return;
  try {
    use(path);
  } catch (const std::exception& e) {
    QMessageBox::critical(this, "shardlab", QString::fromStdString(e.what()));
  }
}

}  // namespace shardlab::gui
