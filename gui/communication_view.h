// The communication view: how busy each class of links was over the step, as
// SimGrid simulated it (NVSwitch ports, HCCS mesh, NICs, leaf and spine
// uplinks): one heat strip per class on the step's time axis, coloured by
// utilisation (bytes carried over capacity), with the class's mean and peak
// and its busiest link, and beside it every link of the class counted by its
// own utilisation over the step (tenths, on a log scale), so a hot link among
// idle ones shows. Results of the analytical engine carry no link usage; the
// view says how to get it.
#pragma once

#include <QWidget>
#include <vector>

#include "core/report/step_result.h"

namespace shardlab::gui {

class CommunicationView : public QWidget {
  Q_OBJECT

 public:
  explicit CommunicationView(QWidget* parent = nullptr);

  void SetResult(const StepResult& result);

  QString HeaderText() const;
  size_t Rows() const { return usage_.size(); }
  QString RowLabel(size_t row) const;
  // Where bin `bin` of row `row` is drawn.
  QRectF BinRect(size_t row, size_t bin) const;
  // The bar of row `row`'s links busy `tenth`/10 .. (`tenth`+1)/10 of the step
  // (empty when none is).
  QRectF HistogramRect(size_t row, size_t tenth) const;
  QString ToolTipAt(QPoint p) const;
  QSize sizeHint() const override { return {1100, 200 + 70 * static_cast<int>(std::max<size_t>(usage_.size(), 3))}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;

 private:
  double Top() const;    // the first strip's top
  double Right() const;  // the strips' right end
  double RowHeight() const;

  std::vector<LinkClassUsage> usage_;
  double step_seconds_ = 0;
  std::string engine_;
  mutable int top_width_ = -1;  // the width Top() was measured at
  mutable double top_ = 0;
};

// The colour of a utilisation from 0 (white) through yellow and red to dark red (1).
QColor UtilisationColor(double utilisation);

}  // namespace shardlab::gui
