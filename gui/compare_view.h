// Two results side by side: their figures (step time, throughput, MFU,
// communication, bubbles, memory) with the change from the first to the
// second, and both pipeline timelines on one time scale.
#pragma once

#include <QLabel>
#include <QTableWidget>
#include <QWidget>

#include "gui/pipeline_view.h"
#include "gui/run_loader.h"

namespace shardlab::gui {

class CompareView : public QWidget {
  Q_OBJECT

 public:
  explicit CompareView(QWidget* parent = nullptr);
  void SetPair(const RunView& a, const QString& a_name, const RunView& b, const QString& b_name);
  bool empty() const { return table_->rowCount() == 0; }
  QTableWidget* table() const { return table_; }
  PipelineView* first() const { return first_; }
  PipelineView* second() const { return second_; }
  QSize sizeHint() const override { return {1100, 760}; }

 private:
  QLabel* title_;
  QTableWidget* table_;
  PipelineView* first_;
  PipelineView* second_;
};

}  // namespace shardlab::gui
