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
  QString name, type, strategy, device_matrix, communication;
  double milliseconds = 0;  // forward + backward compute of one micro-batch on one device
};

class StrategyModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  void SetRows(std::vector<StrategyRow> rows);
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
  QSize sizeHint() const override { return {1100, 600}; }

 private:
  StrategyModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* filter_;
  QTableView* table_;
};

}  // namespace shardlab::gui
