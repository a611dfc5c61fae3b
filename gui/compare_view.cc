#include "gui/compare_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QScrollArea>
#include <algorithm>
#include <set>

#include "gui/chart_parts.h"

namespace shardlab::gui {
namespace {

double PeakMemory(const StepResult& r) {
  double m = 0;
  for (const StageResult& s : r.stages) m = std::max(m, s.memory.peak);
  return m;
}

// One figure of a result, as the table shows it, and the number a change is computed from.
struct Figure {
  const char* name;
  double (*value)(const StepResult&);
  QString (*text)(double);
};

QString Seconds(double s) { return FormatValue(s, AxisUnit::kSeconds, 4); }
QString Bytes(double b) { return FormatValue(b, AxisUnit::kBytes, 4); }
QString Plain(double v) { return QString::number(v, 'g', 5); }
QString Percent(double v) { return QString::number(v, 'f', 1) + "%"; }

const Figure kFigures[] = {
    {"step time", [](const StepResult& r) { return r.step_seconds; }, Seconds},
    {"samples per second", [](const StepResult& r) { return r.samples_per_second; }, Plain},
    {"TFLOP/s per device", [](const StepResult& r) { return r.tflops_per_device; }, Plain},
    {"MFU", [](const StepResult& r) { return 100 * r.mfu; }, Percent},
    {"communication", [](const StepResult& r) { return r.communication_seconds; }, Seconds},
    {"exposed communication", [](const StepResult& r) { return r.exposed_communication_seconds; }, Seconds},
    {"pipeline bubbles (slowest stage)", [](const StepResult& r) { return 100 * r.bubble_fraction; }, Percent},
    {"peak memory per device", PeakMemory, Bytes},
};

}  // namespace

CompareView::CompareView(QWidget* parent)
    : QWidget(parent),
      title_(new QLabel("Run a modified setting from the side panel, or File > Compare with..., to compare results",
                        this)),
      across_engines_(new QCheckBox("compare results of different engines", this)),
      clear_(new QPushButton("Clear", this)),
      table_(new QTableWidget(0, 1, this)),
      timelines_layout_(new QVBoxLayout) {
  title_->setWordWrap(true);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  auto* controls = new QHBoxLayout;
  controls->addWidget(across_engines_);
  controls->addStretch(1);
  controls->addWidget(clear_);
  auto* timelines = new QWidget;
  timelines->setLayout(timelines_layout_);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(timelines);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(title_);
  layout->addLayout(controls);
  layout->addWidget(table_, 1);
  layout->addWidget(scroll, 3);
  connect(across_engines_, &QCheckBox::toggled, this, [this] { Refresh(); });
  connect(clear_, &QPushButton::clicked, this, &CompareView::Clear);
}

void CompareView::Add(const RunView& view, const QString& name) {
  entries_.push_back({name, view.result, view.timeline});
  Refresh();
}

void CompareView::Clear() {
  entries_.clear();
  Refresh();
}

void CompareView::SetAcrossEngines(bool allowed) { across_engines_->setChecked(allowed); }

void CompareView::Refresh() {
  QStringList lines;
  std::set<std::string> engines;
  for (size_t i = 0; i < entries_.size(); ++i) {
    lines << QString("%1. %2 (%3 engine)")
                 .arg(i + 1)
                 .arg(entries_[i].name, QString::fromStdString(entries_[i].result.engine));
    engines.insert(entries_[i].result.engine);
  }
  refusal_.clear();
  if (entries_.size() < 2)
    refusal_ = "Run a modified setting from the side panel, or File > Compare with..., to compare results";
  else if (engines.size() > 1 && !across_engines_->isChecked())
    refusal_ =
        "These results come from different engines, which differ by more than the settings do: not compared. "
        "Tick \"compare results of different engines\" to compare them anyway.";
  title_->setText(lines.join("\n") + (refusal_.isEmpty() ? "" : (lines.isEmpty() ? "" : "\n") + refusal_));
  while (QLayoutItem* item = timelines_layout_->takeAt(0)) {
    delete item->widget();
    delete item;
  }
  timelines_.clear();
  table_->clear();
  table_->setRowCount(0);
  if (!refusal_.isEmpty()) return;
  // One column per result; after the first, each figure's change from the first.
  QStringList headers{"figure"};
  for (size_t i = 0; i < entries_.size(); ++i) headers << QString("%1. %2").arg(i + 1).arg(entries_[i].name);
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(static_cast<int>(std::size(kFigures)) + 1);
  table_->setItem(0, 0, new QTableWidgetItem("engine"));
  for (size_t i = 0; i < entries_.size(); ++i)
    table_->setItem(0, static_cast<int>(i) + 1,
                    new QTableWidgetItem(QString::fromStdString(entries_[i].result.engine)));
  for (int f = 0; f < static_cast<int>(std::size(kFigures)); ++f) {
    const Figure& figure = kFigures[f];
    table_->setItem(f + 1, 0, new QTableWidgetItem(figure.name));
    const double first = figure.value(entries_.front().result);
    for (size_t i = 0; i < entries_.size(); ++i) {
      const double v = figure.value(entries_[i].result);
      QString text = figure.text(v);
      if (i > 0 && first != 0)
        text += QString(" (%1%2%)").arg(v >= first ? "+" : "").arg(100 * (v - first) / first, 0, 'f', 1);
      table_->setItem(f + 1, static_cast<int>(i) + 1, new QTableWidgetItem(text));
    }
  }
  table_->resizeColumnsToContents();
  double end = 0;
  for (const Entry& e : entries_) end = std::max(end, e.result.step_seconds);
  for (size_t i = 0; i < entries_.size(); ++i) {
    auto* view = new PipelineView;
    view->SetTimeline(entries_[i].timeline);
    view->SetVisibleRange(0, end);
    view->setMinimumHeight(view->sizeHint().height());
    timelines_layout_->addWidget(new QLabel(QString("%1. %2").arg(i + 1).arg(entries_[i].name)));
    timelines_layout_->addWidget(view);
    timelines_.push_back(view);
  }
}

}  // namespace shardlab::gui
