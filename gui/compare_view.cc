#include "gui/compare_view.h"

#include <QHeaderView>
#include <QVBoxLayout>
#include <algorithm>

namespace shardlab::gui {

CompareView::CompareView(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel("Run a modified setting from the side panel, or File > Compare with..., to compare two results",
                        this)),
      table_(new QTableWidget(0, 4, this)),
      first_(new PipelineView(this)),
      second_(new PipelineView(this)) {
  table_->setHorizontalHeaderLabels({"figure", "first", "second", "change"});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addWidget(table_, 1);
  layout->addWidget(first_, 2);
  layout->addWidget(second_, 2);
}

void CompareView::SetPair(const RunView& a, const QString& a_name, const RunView& b, const QString& b_name) {
  title_->setText(QString("first: %1\nsecond: %2").arg(a_name, b_name));
  const StepResult &x = a.result, &y = b.result;
  auto peak = [](const StepResult& r) {
    double m = 0;
    for (const StageResult& s : r.stages) m = std::max(m, s.memory.peak);
    return m / (1 << 30);
  };
  struct Row {
    const char* name;
    double first, second;
    const char* unit;
  };
  const Row rows[] = {
      {"step time", x.step_seconds, y.step_seconds, "s"},
      {"samples per second", x.samples_per_second, y.samples_per_second, ""},
      {"TFLOP/s per device", x.tflops_per_device, y.tflops_per_device, ""},
      {"MFU", 100 * x.mfu, 100 * y.mfu, "%"},
      {"communication", x.communication_seconds, y.communication_seconds, "s"},
      {"exposed communication", x.exposed_communication_seconds, y.exposed_communication_seconds, "s"},
      {"pipeline bubbles (slowest stage)", 100 * x.bubble_fraction, 100 * y.bubble_fraction, "% of step"},
      {"peak memory per device", peak(x), peak(y), "GiB"},
  };
  table_->setRowCount(static_cast<int>(std::size(rows)));
  for (int i = 0; i < static_cast<int>(std::size(rows)); ++i) {
    const Row& r = rows[i];
    const QString unit = r.unit[0] ? QString(" ") + r.unit : "";
    table_->setItem(i, 0, new QTableWidgetItem(r.name));
    table_->setItem(i, 1, new QTableWidgetItem(QString::number(r.first, 'g', 5) + unit));
    table_->setItem(i, 2, new QTableWidgetItem(QString::number(r.second, 'g', 5) + unit));
    const QString change =
        r.first != 0
            ? QString("%1%2%").arg(r.second >= r.first ? "+" : "").arg(100 * (r.second - r.first) / r.first, 0, 'f', 1)
            : "";
    table_->setItem(i, 3, new QTableWidgetItem(change));
  }
  table_->resizeColumnsToContents();
  first_->SetTimeline(a.timeline);
  second_->SetTimeline(b.timeline);
  const double end = std::max(x.step_seconds, y.step_seconds);
  first_->SetVisibleRange(0, end);
  second_->SetVisibleRange(0, end);
}

}  // namespace shardlab::gui
