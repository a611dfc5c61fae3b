#include "gui/run_panel.h"

#include <QCheckBox>
#include <QEvent>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QScrollArea>
#include <QVBoxLayout>
#include <climits>
#include <stdexcept>

namespace shardlab::gui {
namespace {

// Spin boxes and lists in a scrolled panel take the wheel only once focused:
// scrolling the panel never changes a setting by accident.
class WheelOnlyWhenFocused : public QObject {
 public:
  using QObject::QObject;
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::Wheel) return false;
    auto* widget = qobject_cast<QWidget*>(watched);
    if (widget && widget->hasFocus()) return false;
    event->ignore();  // the scroll area scrolls instead
    return true;
  }
};

// The closed vocabularies among a section's keys, by the key's last part.
std::vector<std::string> VocabularyOf(const std::string& section, const std::string& key) {
  const std::string leaf = key.substr(key.rfind('.') + 1);
  if (section == "stack") return StackKeyVocabulary(leaf);
  if (section == "simulation") return SimulationKeyVocabulary(leaf);
  std::vector<std::string> names;
  if (leaf == "parallel_mode")
    for (int i = 0; i <= static_cast<int>(ParallelMode::kHybridParallel); ++i)
      names.push_back(ToString(static_cast<ParallelMode>(i)));
  if (leaf == "search_mode")
    for (int i = 0; i <= static_cast<int>(SearchMode::kShardingPropagation); ++i)
      names.push_back(ToString(static_cast<SearchMode>(i)));
  if (leaf == "optimizer_level")
    for (int i = 0; i <= static_cast<int>(OptimizerLevel::kLevel3); ++i)
      names.push_back(ToString(static_cast<OptimizerLevel>(i)));
  if (leaf == "mode" && key.rfind("comm_fusion.", 0) == 0)
    for (int i = static_cast<int>(FusionSetting::Mode::kAuto); i <= static_cast<int>(FusionSetting::Mode::kIndex); ++i)
      names.push_back(ToString(static_cast<FusionSetting::Mode>(i)));
  return names;
}

// A file field with a Browse button.
QWidget* FileRow(QWidget* parent, QLineEdit* edit, const QString& title) {
  auto* row = new QWidget(parent);
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(edit, 1);
  auto* browse = new QPushButton("...", row);
  browse->setToolTip("choose a file");
  QObject::connect(browse, &QPushButton::clicked, row, [edit, title, row] {
    const QString path = QFileDialog::getOpenFileName(row, title, edit->text(), "JSON (*.json)");
    if (!path.isEmpty()) edit->setText(path);
  });
  layout->addWidget(browse);
  return row;
}

}  // namespace

RunPanel::RunPanel(QWidget* parent)
    : QWidget(parent),
      fields_host_(new QWidget),
      wheel_filter_(new WheelOnlyWhenFocused(this)),
      fields_(new QFormLayout(fields_host_)),
      model_(new QLineEdit(this)),
      cluster_(new QLineEdit(this)),
      engine_(new QComboBox(this)),
      run_(new QPushButton("Run", this)),
      cancel_(new QPushButton("Cancel", this)),
      progress_(new QProgressBar(this)),
      message_(new QLabel(this)) {
  // Labels above their fields: dotted keys are long, the dock is narrow.
  fields_->setRowWrapPolicy(QFormLayout::WrapAllRows);
  setMinimumWidth(300);
  engine_->addItem("analytical", "analytical");
  engine_->addItem("SimGrid", "simgrid");
  model_->setPlaceholderText("inline in the run file");
  cluster_->setPlaceholderText("inline in the run file");
  auto* files = new QFormLayout;
  files->addRow("model", FileRow(this, model_, "Model file"));
  files->addRow("cluster", FileRow(this, cluster_, "Cluster file"));
  files->addRow("engine", engine_);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(fields_host_);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(run_);
  buttons->addWidget(cancel_);
  progress_->setTextVisible(true);
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(files);
  layout->addWidget(new QLabel("parallel, stack and simulation settings", this));
  layout->addWidget(scroll, 1);
  layout->addLayout(buttons);
  layout->addWidget(progress_);
  layout->addWidget(message_);
  connect(run_, &QPushButton::clicked, this, &RunPanel::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &RunPanel::cancelRequested);
  SetBusy(false);
}

void RunPanel::AddFields(const nlohmann::json& values, const std::string& section, const std::string& prefix) {
  const std::string named = section == "parallel" ? "" : section + ".";
  for (const auto& [name, value] : values.items()) {
    const std::string key = prefix + name;
    if (value.is_object() && !value.empty()) {
      AddFields(value, section, key + ".");
      continue;
    }
    // The panel's own engine list chooses the engine.
    if (section == "simulation" && key == "engine") continue;
    QWidget* widget = nullptr;
    const std::vector<std::string> vocabulary = VocabularyOf(section, key);
    if (value.is_boolean()) {
      auto* box = new QCheckBox(fields_host_);
      box->setChecked(value.get<bool>());
      widget = box;
    } else if (value.is_number_integer()) {
      auto* spin = new QSpinBox(fields_host_);
      spin->setRange(-1, INT_MAX);
      spin->setValue(static_cast<int>(value.get<int64_t>()));
      widget = spin;
    } else if (value.is_string() && !vocabulary.empty()) {
      auto* list = new QComboBox(fields_host_);
      for (const std::string& v : vocabulary) list->addItem(QString::fromStdString(v));
      list->setCurrentText(QString::fromStdString(value.get<std::string>()));
      widget = list;
    } else {
      // Strings as typed, anything else (numbers with a fraction, lists) as JSON text.
      auto* edit = new QLineEdit(fields_host_);
      edit->setText(QString::fromStdString(value.is_string() ? value.get<std::string>() : value.dump()));
      widget = edit;
    }
    widget->setObjectName(QString::fromStdString(named + key));
    if (qobject_cast<QSpinBox*>(widget) || qobject_cast<QComboBox*>(widget)) {
      widget->setFocusPolicy(Qt::StrongFocus);
      widget->installEventFilter(wheel_filter_);
    }
    fields_->addRow(QString::fromStdString(named + key), widget);
    std::string pointer = "/" + key;  // "a.b" is section["a"]["b"]
    for (char& c : pointer)
      if (c == '.') c = '/';
    by_key_[named + key] = {section, pointer, value, widget};
    order_.push_back(named + key);
  }
}

void RunPanel::SetRun(const RunSpec& run) {
  while (fields_->rowCount() > 0) fields_->removeRow(0);
  by_key_.clear();
  order_.clear();
  const nlohmann::json doc = ToJson(run);
  for (const char* section : {"parallel", "stack", "simulation"}) AddFields(doc.at(section), section, "");
  model_original_ = QString::fromStdString(run.model_file);
  cluster_original_ = QString::fromStdString(run.cluster_file);
  model_->setText(model_original_);
  cluster_->setText(cluster_original_);
}

QWidget* RunPanel::Field(const std::string& key) const {
  const auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : it->second.widget;
}

std::vector<std::string> RunPanel::Keys() const { return order_; }

bool RunPanel::SetField(const std::string& key, const QString& value) {
  QWidget* w = Field(key);
  if (!w) return false;
  if (auto* box = qobject_cast<QCheckBox*>(w)) box->setChecked(value == "true");
  if (auto* spin = qobject_cast<QSpinBox*>(w)) spin->setValue(value.toInt());
  if (auto* list = qobject_cast<QComboBox*>(w)) list->setCurrentText(value);
  if (auto* edit = qobject_cast<QLineEdit*>(w)) edit->setText(value);
  return true;
}

nlohmann::json RunPanel::ValueOf(const std::string& key, const FieldSpec& field) const {
  if (auto* box = qobject_cast<QCheckBox*>(field.widget)) return box->isChecked();
  if (auto* spin = qobject_cast<QSpinBox*>(field.widget)) return spin->value();
  if (auto* list = qobject_cast<QComboBox*>(field.widget)) return list->currentText().toStdString();
  const std::string text = qobject_cast<QLineEdit*>(field.widget)->text().trimmed().toStdString();
  if (field.original.is_string()) return text;
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    const std::string name = field.section == "parallel" ? "parallel." + key : key;
    throw std::runtime_error(name + ": \"" + text + "\" is not JSON; expected a value like " + field.original.dump());
  }
}

nlohmann::json RunPanel::Changes() const {
  nlohmann::json changes = {{"parallel", nlohmann::json::object()}, {"simulation", nlohmann::json::object()}};
  // The stack: its preset and the keys changed, so that a new preset brings its own keys.
  nlohmann::json stack = nlohmann::json::object();
  bool stack_changed = false;
  for (const auto& [key, field] : by_key_) {
    const nlohmann::json value = ValueOf(key, field);
    const nlohmann::json::json_pointer pointer(field.pointer);
    if (field.section != "stack") {
      changes[field.section][pointer] = value;
    } else if (field.pointer == "/preset" || value != field.original) {
      stack[pointer] = value;
      stack_changed |= value != field.original;
    }
  }
  if (stack_changed) changes["stack"] = stack;
  if (model_->text() != model_original_) changes["model"] = model_->text().trimmed().toStdString();
  if (cluster_->text() != cluster_original_) changes["cluster"] = cluster_->text().trimmed().toStdString();
  return changes;
}

QString RunPanel::ChangeSummary() const {
  QStringList parts;
  for (const std::string& key : order_) {
    const FieldSpec& field = by_key_.at(key);
    nlohmann::json now;
    try {
      now = ValueOf(key, field);
    } catch (const std::exception&) {
      now = "?";
    }
    if (now != field.original)
      parts << QString::fromStdString(key + "=" + (now.is_string() ? now.get<std::string>() : now.dump()));
  }
  if (model_->text() != model_original_) parts << "model=" + model_->text();
  if (cluster_->text() != cluster_original_) parts << "cluster=" + cluster_->text();
  return parts.isEmpty() ? "unchanged" : parts.join(", ");
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
