// The side panel that edits a run and runs it: one field for every key of
// the run's "parallel" section (nested sections as dotted names, such as
// parallel_optimizer_config.optimizer_level; booleans as check boxes, integers
// as spin boxes, closed vocabularies as lists, lists as JSON text), of its
// software "stack" and of its "simulation" options (named stack.* and
// simulation.*), the model and cluster files, and the engine. A changed stack
// preset brings that preset's keys, except those changed beside it. Edits are checked by the run-file reader
// when Run is pressed, so a refused edit shows the reader's own message.
// Run and Cancel buttons, a progress bar while the worker runs, and the
// outcome or error.
#pragma once

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QWidget>
#include <map>

#include <nlohmann/json.hpp>

#include "core/config/run_config.h"

namespace shardlab::gui {

class RunPanel : public QWidget {
  Q_OBJECT

 public:
  explicit RunPanel(QWidget* parent = nullptr);

  // Builds the fields from a run.
  void SetRun(const RunSpec& run);
  // The edited run document's parts for EditRun: {"parallel": {...},
  // "simulation": {...}, "stack" when a stack key changed (its preset and
  // the changed keys), and "model" / "cluster" file paths when they were
  // changed}. Throws naming the key when a list field is not JSON.
  nlohmann::json Changes() const;
  // "micro_batch_num=16, recompute=false": the keys that differ from the run set by SetRun.
  QString ChangeSummary() const;
  Engine ChosenEngine() const;
  void SetBusy(bool busy);
  void SetMessage(const QString& text);
  void SetElapsed(double seconds);

  // The field of a key ("pipeline_stages", "parallel_optimizer_config.optimizer_level",
  // "stack.preset", "simulation.pipeline_schedule"), null for none.
  QWidget* Field(const std::string& key) const;
  // Sets a field from text as a user would type or pick it; false for an unknown key.
  bool SetField(const std::string& key, const QString& value);
  std::vector<std::string> Keys() const;
  QLineEdit* model_file() const { return model_; }
  QLineEdit* cluster_file() const { return cluster_; }
  QPushButton* run_button() const { return run_; }
  QPushButton* cancel_button() const { return cancel_; }
  QProgressBar* progress() const { return progress_; }
  QLabel* message() const { return message_; }

 signals:
  void runRequested();
  void cancelRequested();

 private:
  // One field per leaf of a section, by dotted key.
  struct FieldSpec {
    std::string section;  // "parallel", "stack" or "simulation"
    std::string pointer;  // the key's JSON pointer inside its section
    nlohmann::json original;
    QWidget* widget = nullptr;
  };
  void AddFields(const nlohmann::json& values, const std::string& section, const std::string& prefix);
  nlohmann::json ValueOf(const std::string& key, const FieldSpec& field) const;

  QWidget* fields_host_;
  QObject* wheel_filter_;
  QFormLayout* fields_;
  std::map<std::string, FieldSpec> by_key_;
  std::vector<std::string> order_;
  QLineEdit* model_;
  QLineEdit* cluster_;
  QString model_original_, cluster_original_;
  QComboBox* engine_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* message_;
};

}  // namespace shardlab::gui
