#include "gui/tensor_map_view.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gui/palette.h"
#include "gui/tooltip.h"

namespace shardlab::gui {
namespace {

constexpr double kLeft = 30, kTop = 110, kRight = 30, kBottom = 20;

}  // namespace

TensorMapView::TensorMapView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(400, 300);
}

void TensorMapView::SetLayouts(const RunLayouts* layouts) {
  layouts_ = layouts;
  const int op = layouts_ && !layouts_->ops.empty() ? DefaultOperator(*layouts_) : -1;
  Show(op, op >= 0 ? DefaultTensor(layouts_->ops[op]) : 0);
}

void TensorMapView::Show(int op_index, int tensor_index) {
  op_ = layouts_ && op_index >= 0 && op_index < static_cast<int>(layouts_->ops.size()) ? op_index : -1;
  const int tensors = op_ >= 0 ? static_cast<int>(layouts_->ops[op_].tensors.size()) : 0;
  tensor_ = tensors == 0 ? -1 : std::clamp(tensor_index, 0, tensors - 1);
  // Splits and holders once per choice: painting and tooltips look them up.
  splits_.clear();
  holders_.clear();
  if (const TensorView* t = tensor()) {
    const OperatorView& o = *op();
    splits_ = SplitsOf(o, *t);
    int64_t slices = 1;
    for (int64_t s : splits_) slices *= s;
    holders_.resize(static_cast<size_t>(slices));
    const DeviceGrid grid(o.device_matrix);
    for (int64_t l = 0; l < grid.devices(); ++l)
      holders_[SliceId(o, *t, grid.Coordinates(l))].push_back(o.first_rank + l);
  }
  update();
}

const OperatorView* TensorMapView::op() const { return op_ >= 0 ? &layouts_->ops[op_] : nullptr; }

const TensorView* TensorMapView::tensor() const {
  const OperatorView* o = op();
  return o && tensor_ >= 0 ? &o->tensors[tensor_] : nullptr;
}

QString TensorMapView::HeaderText() const {
  const TensorView* t = tensor();
  if (!t) return "no tensor selected";
  const OperatorView& o = *op();
  std::string text = fmt::format("{} ({} of {}): shape {}, tensor map {}, device matrix {}, slice {}", t->name,
                                 t->role, o.name, ShapeText(t->shape), ShapeText(t->map),
                                 ShapeText(o.device_matrix), ShapeText(t->slice));
  const Shape splits = SplitsOf(o, *t);
  for (size_t j = 0; j < t->map.size(); ++j) {
    if (t->map[j] == kNotSplit || splits[j] == 1) {
      text += fmt::format("\n  tensor dim {} ({}): whole on every device", j, t->shape[j]);
    } else {
      const int d = DimFromMapValue(t->map[j], o.device_matrix.size());
      text += fmt::format("\n  tensor dim {} ({}): split {} ways along device dim {} (map value {})", j, t->shape[j],
                          splits[j], d, t->map[j]);
    }
  }
  int64_t slices = 1;
  for (int64_t s : splits) slices *= s;
  int64_t devices = 1;
  for (int64_t d : o.device_matrix) devices *= d;
  text += fmt::format("\n  {} slices, each held by {} devices", slices, devices / std::max<int64_t>(slices, 1));
  return QString::fromStdString(text);
}

int64_t TensorMapView::SliceRows() const {
  int64_t rows = 1;
  for (size_t j = 0; j + 1 < splits_.size(); ++j) rows *= splits_[j];
  return rows;
}

int64_t TensorMapView::SliceCols() const { return splits_.empty() ? 1 : splits_.back(); }

std::vector<int64_t> TensorMapView::SliceAt(int64_t row, int64_t col) const {
  if (splits_.empty()) return {};
  std::vector<int64_t> s(splits_.size(), 0);
  s.back() = col;
  for (int j = static_cast<int>(splits_.size()) - 2; j >= 0; --j) {
    s[j] = row % splits_[j];
    row /= splits_[j];
  }
  return s;
}

std::vector<int64_t> TensorMapView::HoldersOf(const std::vector<int64_t>& slice) const {
  return holders_.empty() ? std::vector<int64_t>{} : holders_[SliceIdOfIndex(splits_, slice)];
}

QString TensorMapView::SliceLabel(int64_t row, int64_t col) const {
  const std::vector<int64_t> s = SliceAt(row, col);
  return QString::fromStdString(SliceRanges(*tensor(), s) + "\nranks " + RankList(HoldersOf(s), 4));
}

QRectF TensorMapView::SliceRect(int64_t row, int64_t col) const {
  const double w = (width() - kLeft - kRight) / static_cast<double>(SliceCols());
  const double h = (height() - kTop - kBottom) / static_cast<double>(SliceRows());
  return {kLeft + static_cast<double>(col) * w, kTop + static_cast<double>(row) * h, w, h};
}

QString TensorMapView::ToolTipAt(QPoint pos) const {
  const TensorView* t = tensor();
  if (!t) return {};
  const QRectF first = SliceRect(0, 0);
  const double x = pos.x() - first.left(), y = pos.y() - first.top();
  const int64_t c = static_cast<int64_t>(std::floor(x / first.width())), r = static_cast<int64_t>(std::floor(y / first.height()));
  if (x < 0 || y < 0 || r >= SliceRows() || c >= SliceCols()) return {};
  const std::vector<int64_t> s = SliceAt(r, c);
  return QString::fromStdString(fmt::format("{} slice {} = {}\nheld by ranks {}", t->name, ShapeText(s),
                                            SliceRanges(*t, s), RankList(HoldersOf(s), 16)));
}

void TensorMapView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  p.setPen(Qt::black);
  p.drawText(QRectF(10, 6, width() - 20, kTop - 10), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, HeaderText());
  const TensorView* t = tensor();
  if (!t) return;
  const int64_t rows = SliceRows(), cols = SliceCols();
  const QRectF first = SliceRect(0, 0);
  const bool labels = first.width() > 90 && first.height() > 34;
  const bool borders = first.width() >= 4 && first.height() >= 4;  // thinner slices: colour only
  // Slices thinner than a pixel share it: draw one of each pixel's worth.
  const int64_t row_step = std::max<int64_t>(1, static_cast<int64_t>(1 / first.height()));
  const int64_t col_step = std::max<int64_t>(1, static_cast<int64_t>(1 / first.width()));
  p.setPen(QColor(40, 40, 40));
  for (int64_t r = 0; r < rows; r += row_step)
    for (int64_t c = 0; c < cols; c += col_step) {
      QRectF rect = SliceRect(r, c);
      rect.setSize({rect.width() * static_cast<double>(std::min(col_step, cols - c)),
                    rect.height() * static_cast<double>(std::min(row_step, rows - r))});
      // The colour of the slice is that of its devices in the device-matrix view.
      p.fillRect(rect, SliceColor(r * cols + c));
      if (borders) p.drawRect(rect);
      if (labels) p.drawText(rect.adjusted(4, 2, -4, -2), Qt::AlignCenter | Qt::TextWordWrap, SliceLabel(r, c));
    }
  // Axis names: the leading dimensions down, the last across.
  p.setPen(QColor(80, 80, 80));
  if (t->shape.empty()) return;
  p.drawText(QPointF(kLeft, kTop - 4), QString("dim %1 (%2) across").arg(t->shape.size() - 1).arg(t->shape.back()));
  p.save();
  p.translate(kLeft - 8, height() - kBottom);
  p.rotate(-90);
  p.drawText(QPointF(0, 0), t->shape.size() > 1 ? QString("dims 0..%1 down").arg(t->shape.size() - 2) : "");
  p.restore();
}

bool TensorMapView::event(QEvent* e) {
  return ShowToolTip(this, e, [this](QPoint p) { return ToolTipAt(p); }) || QWidget::event(e);
}

}  // namespace shardlab::gui
