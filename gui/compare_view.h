// Results side by side, as many as the user adds: their figures (step time,
// throughput, MFU, communication, bubbles, memory), each against the first,
// which engine produced each, and every pipeline timeline on one time scale.
// Results of different engines (an analytical estimate beside a SimGrid
// simulation) differ by the engines as well as by the settings, so they are
// compared only when the user asks for it.
#pragma once

#include <QCheckBox>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QWidget>
#include <vector>

#include "gui/pipeline_view.h"
#include "gui/run_loader.h"

namespace shardlab::gui {

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);

  // Adds a result under `name` ("before the edit", a file name).
  void Add(const RunView& view, const QString& name);
  void Clear();
  // Whether results of different engines are compared (off by default).
  void SetAcrossEngines(bool allowed);

  size_t Results() const { return entries_.size(); }
  // True while no figures are shown (fewer than two results, or refused).
  bool empty() const { return table_->rowCount() == 0; }
  // Why nothing is compared ("" when the table is shown).
  QString Refusal() const { return refusal_; }
  QTableWidget* table() const { return table_; }
  PipelineView* timeline(size_t i) const { return timelines_[i]; }
  QCheckBox* across_engines() const { return across_engines_; }
  QSize sizeHint() const override { return {1100, 760}; }

 private:
  struct Entry {
    QString name;
    StepResult result;
    PipelineTimeline timeline;
  };
  void Refresh();

  std::vector<Entry> entries_;
  QString refusal_;
  QLabel* title_;
  QCheckBox* across_engines_;
  QPushButton* clear_;
  QTableWidget* table_;
  QVBoxLayout* timelines_layout_;
  std::vector<PipelineView*> timelines_;
};

}  // namespace shardlab::gui
