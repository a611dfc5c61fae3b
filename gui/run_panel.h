// The side panel that edits a run's main parallel settings (devices,
// pipeline stages, micro-batches, parallel mode and search mode, the
// AllReduce fusion split) and runs the simulation: Run and Cancel buttons, a
// progress bar while the worker runs, and the outcome or error.
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "core/config/run_config.h"

namespace shardlab::gui {

class RunPanel : public QWidget {
  Q_OBJECT

 public:
  explicit RunPanel(QWidget* parent = nullptr);

  // Fills the fields from a run.
  void SetRun(const RunSpec& run);
  // The parallel keys the fields set (for EditRun). Throws when the fusion list does not parse.
  nlohmann::json Changes() const;
  Engine ChosenEngine() const;
  void SetBusy(bool busy);
  void SetMessage(const QString& text);
  void SetElapsed(double seconds);

  QSpinBox* devices() const { return devices_; }
  QSpinBox* stages() const { return stages_; }
  QSpinBox* micro_batches() const { return micro_batches_; }
  QComboBox* mode() const { return mode_; }
  QLineEdit* fusion() const { return fusion_; }
  QPushButton* run_button() const { return run_; }
  QPushButton* cancel_button() const { return cancel_; }
  QProgressBar* progress() const { return progress_; }
  QLabel* message() const { return message_; }

 signals:
  void runRequested();
  void cancelRequested();

 private:
  QSpinBox* devices_;
  QSpinBox* stages_;
  QSpinBox* micro_batches_;
  QComboBox* mode_;
  QLineEdit* fusion_;
  QComboBox* engine_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* message_;
};

}  // namespace shardlab::gui
