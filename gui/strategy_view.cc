#include "gui/strategy_view.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QVBoxLayout>

namespace shardlab::gui {

void StrategyModel::SetRows(std::vector<StrategyRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

QVariant StrategyModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const StrategyRow& r = rows_[index.row()];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case 0:
        return r.name;
      case 1:
        return r.type;
      case 2:
        return r.strategy;
      case 3:
        return r.device_matrix;
      case 4:
        return r.communication;
      case 5:
        return QString::number(r.milliseconds, 'f', 3);
    }
  }
  if (role == Qt::UserRole) return index.column() == 5 ? QVariant(r.milliseconds) : data(index, Qt::DisplayRole);
  return {};
}

QVariant StrategyModel::headerData(int section, Qt::Orientation orientation, int role) const {
  static const char* kNames[] = {"operator", "type", "strategy", "device matrix", "communication", "compute ms"};
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal || section < 0 || section > 5) return {};
  return QString(kNames[section]);
}

StrategyView::StrategyView(QWidget* parent)
    : QWidget(parent),
      model_(new StrategyModel),
      proxy_(new QSortFilterProxyModel(this)),
      filter_(new QLineEdit(this)),
      table_(new QTableView(this)) {
  model_->setParent(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  proxy_->setFilterKeyColumn(-1);  // any column
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  filter_->setPlaceholderText("filter operators (name, type, strategy, communication)");
  connect(filter_, &QLineEdit::textChanged, this, &StrategyView::SetFilter);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);  // graph order until a header is clicked
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (quiet_ || !current.isValid()) return;
    emit operatorSelected(model_->rows()[proxy_->mapToSource(current).row()].op);
  });
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(filter_);
  layout->addWidget(table_);
}

void StrategyView::SetRows(std::vector<StrategyRow> rows) {
  model_->SetRows(std::move(rows));
  table_->resizeColumnsToContents();
}

void StrategyView::SelectOperator(int op) {
  const auto& rows = model_->rows();
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].op != op) continue;
    const QModelIndex index = proxy_->mapFromSource(model_->index(static_cast<int>(r), 0));
    if (!index.isValid()) return;
    quiet_ = true;
    table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->scrollTo(index);
    quiet_ = false;
    return;
  }
}

int StrategyView::SelectedOperator() const {
  const QModelIndex current = table_->selectionModel()->currentIndex();
  return current.isValid() ? model_->rows()[proxy_->mapToSource(current).row()].op : -1;
}

void StrategyView::SetFilter(const QString& text) {
  if (filter_->text() != text) filter_->setText(text);
  proxy_->setFilterFixedString(text);
}

}  // namespace shardlab::gui
