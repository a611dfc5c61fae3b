// The operator and tensor the views show, shared by them: the strategy table
// and the pipeline timeline set it, the device-matrix and tensor-map views
// follow it.
#pragma once

#include <QObject>

namespace shardlab::gui {

class Selection : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;
  int op() const { return op_; }
  int tensor() const { return tensor_; }

  // A new operator starts at its first tensor (-1 keeps the tensor index when it exists there).
  void Select(int op, int tensor = 0) {
    if (op == op_ && tensor == tensor_) return;
    op_ = op;
    tensor_ = tensor;
    emit changed(op_, tensor_);
  }

 signals:
  void changed(int op, int tensor);

 private:
  int op_ = -1;
  int tensor_ = 0;
};

}  // namespace shardlab::gui
