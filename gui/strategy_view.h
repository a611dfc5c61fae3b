// The strategy view: a table of the operators (name, type, strategy, device
// matrix, inserted communication, compute time per micro-batch) with a
// filter box and sortable columns.
#pragma once

#include <QAbstractTableModel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QWidget>
#include <vector>

namespace shardlab::gui {

struct StrategyRow {
  int op = -1;  // graph operator index
  QString name, type, strategy, device_matrix, communication;
  double milliseconds = 0;  // forward + backward compute of one micro-batch on one device
};

class StrategyModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  void SetRows(std::vector<StrategyRow> rows);
  const std::vector<StrategyRow>& rows() const { return rows_; }
  int rowCount(const QModelIndex& = {}) const override { return static_cast<int>(rows_.size()); }
  int columnCount(const QModelIndex& = {}) const override { return 6; }
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<StrategyRow> rows_;
};

class StrategyView : public QWidget {
  Q_OBJECT

 public:
  explicit StrategyView(QWidget* parent = nullptr);
  void SetRows(std::vector<StrategyRow> rows);
  // Shows only operators whose name or type contains `text`.
  void SetFilter(const QString& text);
  int VisibleRows() const { return proxy_->rowCount(); }
  // Highlights the operator's row (when the filter shows it) without emitting operatorSelected.
  void SelectOperator(int op);
  // The operator of the highlighted row, -1 for none.
  int SelectedOperator() const;
  QTableView* table() const { return table_; }
  QSize sizeHint() const override { return {1100, 600}; }

 signals:
  void operatorSelected(int op);

 private:
  StrategyModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* filter_;
  QTableView* table_;
  bool quiet_ = false;  // selection changes made by SelectOperator
};

}  // namespace shardlab::gui
