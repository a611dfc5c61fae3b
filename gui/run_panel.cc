#include "gui/run_panel.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QVBoxLayout>
#include <stdexcept>

namespace shardlab::gui {

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent),
      devices_(new QSpinBox(this)),
      stages_(new QSpinBox(this)),
      micro_batches_(new QSpinBox(this)),
      mode_(new QComboBox(this)),
      fusion_(new QLineEdit(this)),
      engine_(new QComboBox(this)),
      run_(new QPushButton("Run", this)),
      cancel_(new QPushButton("Cancel", this)),
      progress_(new QProgressBar(this)),
      message_(new QLabel(this)) {
  devices_->setRange(1, 4096);
  stages_->setRange(1, 4096);
  micro_batches_->setRange(1, 65536);
  mode_->addItem("semi_auto_parallel (configured strategies)", "semi_auto_parallel");
  mode_->addItem("data_parallel", "data_parallel");
  mode_->addItem("auto_parallel: dynamic_programming", "dynamic_programming");
  mode_->addItem("auto_parallel: recursive_programming", "recursive_programming");
  mode_->addItem("auto_parallel: sharding_propagation", "sharding_propagation");
  fusion_->setPlaceholderText("e.g. 20, 35 (empty: MindSpore's default)");
  engine_->addItem("analytical", "analytical");
  engine_->addItem("SimGrid", "simgrid");
  auto* form = new QFormLayout;
  form->addRow("devices (device_num)", devices_);
  form->addRow("pipeline_stages", stages_);
  form->addRow("micro_batch_num", micro_batches_);
  form->addRow("mode", mode_);
  form->addRow("all_reduce_fusion_config", fusion_);
  form->addRow("engine", engine_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  progress_->setTextVisible(true);
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addLayout(buttons);
  layout->addWidget(progress_);
  layout->addWidget(message_);
  layout->addStretch();
  connect(run_, &QPushButton::clicked, this, &RunPanel::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &RunPanel::cancelRequested);
  SetBusy(false);
}

void RunPanel::SetRun(const RunSpec& run) {
  const ParallelConfig& p = run.parallel;
  devices_->setValue(static_cast<int>(p.device_num));
  stages_->setValue(static_cast<int>(p.pipeline_stages));
  micro_batches_->setValue(static_cast<int>(p.micro_batch_num));
  QString mode = ToString(p.parallel_mode);
  if (p.parallel_mode == ParallelMode::kAutoParallel) mode = ToString(p.search_mode);
  const int index = mode_->findData(mode);
  mode_->setCurrentIndex(index >= 0 ? index : 0);
  QStringList splits;
  if (p.comm_fusion.allreduce.mode == FusionSetting::Mode::kIndex)
    for (int64_t s : p.comm_fusion.allreduce.indices) splits << QString::number(s);
  fusion_->setText(splits.join(", "));
}

nlohmann::json RunPanel::Changes() const {
  nlohmann::json c = {{"device_num", devices_->value()},
                      {"pipeline_stages", stages_->value()},
                      {"micro_batch_num", micro_batches_->value()}};
  const QString mode = mode_->currentData().toString();
  if (mode == "semi_auto_parallel" || mode == "data_parallel") {
    c["parallel_mode"] = mode.toStdString();
  } else {
    c["parallel_mode"] = "auto_parallel";
    c["search_mode"] = mode.toStdString();
  }
  nlohmann::json splits = nlohmann::json::array();
  for (const QString& part : fusion_->text().split(',', Qt::SkipEmptyParts)) {
    bool ok = false;
    const int v = part.trimmed().toInt(&ok);
    if (!ok)
      throw std::runtime_error("all_reduce_fusion_config: \"" + part.trimmed().toStdString() +
                               "\" is not an operator index; expected e.g. 20, 35");
    splits.push_back(v);
  }
  c["all_reduce_fusion_config"] = splits;
  return c;
}

Engine RunPanel::ChosenEngine() const { return ParseEngine(engine_->currentData().toString().toStdString()); }

void RunPanel::SetBusy(bool busy) {
  run_->setEnabled(!busy);
  cancel_->setEnabled(busy);
  progress_->setRange(0, busy ? 0 : 1);  // busy: an indeterminate bar
  progress_->setValue(busy ? 0 : 1);
  progress_->setFormat(busy ? "running" : "idle");
}

void RunPanel::SetMessage(const QString& text) { message_->setText(text); }

void RunPanel::SetElapsed(double seconds) { progress_->setFormat(QString("running %1 s").arg(seconds, 0, 'f', 1)); }

}  // namespace shardlab::gui
