#include "gui/tensor_map_view.h"

#include <QEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gui/chart_parts.h"
#include "gui/palette.h"
#include "gui/tooltip.h"

namespace shardlab::gui {
namespace {

constexpr double kMargin = 10, kGap = 12;

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
  frame_width_ = -1;
  // Splits, the dimensions drawn and the holders once per choice: painting and tooltips look them up.
  splits_.clear();
  holders_.clear();
  block_dims_.clear();
  row_dim_ = col_dim_ = -1;
  if (const TensorView* t = tensor()) {
    const OperatorView& o = *op();
    splits_ = SplitsOf(o, *t);
    std::vector<int> split;
    int64_t slices = 1;
    for (size_t j = 0; j < splits_.size(); ++j) {
      slices *= splits_[j];
      if (splits_[j] > 1) split.push_back(static_cast<int>(j));
    }
    if (!split.empty()) {
      col_dim_ = split.back();
      split.pop_back();
    }
    if (!split.empty()) {
      row_dim_ = split.back();
      split.pop_back();
    }
    block_dims_ = split;
    holders_.resize(static_cast<size_t>(slices));
    const DeviceGrid grid(o.device_matrix);
    for (int64_t l = 0; l < grid.devices(); ++l) holders_[SliceId(o, *t, grid.Coordinates(l))].push_back(o.Rank(l));
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
  std::string text =
      fmt::format("{} ({} of {}): shape {}, tensor map {}, device matrix {}, slice {}", t->name, t->role, o.name,
                  ShapeText(t->shape), ShapeText(t->map), ShapeText(o.device_matrix), ShapeText(t->slice));
  for (size_t j = 0; j < t->map.size(); ++j) {
    if (t->map[j] == kNotSplit || splits_[j] == 1) {
      text += fmt::format("\n  tensor dim {} ({}): whole on every device", j, t->shape[j]);
    } else {
      const int d = DimFromMapValue(t->map[j], o.device_matrix.size());
      text += fmt::format("\n  tensor dim {} ({}): split {} ways along device dim {} (map value {})", j, t->shape[j],
                          splits_[j], d, t->map[j]);
    }
  }
  int64_t slices = 1;
  for (int64_t s : splits_) slices *= s;
  int64_t devices = 1;
  for (int64_t d : o.device_matrix) devices *= d;
  const int64_t holders = devices / std::max<int64_t>(slices, 1);
  text += fmt::format("\n  {} slice{}, each held by {} device{}", slices, slices == 1 ? "" : "s", holders,
                      holders == 1 ? "" : "s");
  return QString::fromStdString(text);
}

int64_t TensorMapView::Blocks() const {
  int64_t n = 1;
  for (int d : block_dims_) n *= splits_[d];
  return n;
}

int64_t TensorMapView::SliceRows() const { return row_dim_ >= 0 ? splits_[row_dim_] : 1; }

int64_t TensorMapView::SliceCols() const { return col_dim_ >= 0 ? splits_[col_dim_] : 1; }

std::vector<int64_t> TensorMapView::SliceAt(int64_t block, int64_t row, int64_t col) const {
  std::vector<int64_t> s(splits_.size(), 0);
  if (col_dim_ >= 0) s[col_dim_] = col;
  if (row_dim_ >= 0) s[row_dim_] = row;
  for (int j = static_cast<int>(block_dims_.size()) - 1; j >= 0; --j) {
    s[block_dims_[j]] = block % splits_[block_dims_[j]];
    block /= splits_[block_dims_[j]];
  }
  return s;
}

std::vector<int64_t> TensorMapView::HoldersOf(const std::vector<int64_t>& slice) const {
  return holders_.empty() ? std::vector<int64_t>{} : holders_[SliceIdOfIndex(splits_, slice)];
}

QString TensorMapView::SliceLabel(int64_t block, int64_t row, int64_t col) const {
  const std::vector<int64_t> s = SliceAt(block, row, col);
  return QString::fromStdString(SliceRanges(*tensor(), s) + "\nranks " + RankList(HoldersOf(s), 4));
}

QString TensorMapView::BlockLabel(int64_t block) const {
  if (block_dims_.empty()) return {};
  const std::vector<int64_t> s = SliceAt(block, 0, 0);
  QStringList parts;
  for (int d : block_dims_) parts << QString("dim %1 = %2 of %3").arg(d).arg(s[d]).arg(splits_[d]);
  return parts.join(", ");
}

TensorMapView::Frame TensorMapView::FrameOf() const {
  if (frame_width_ == width() && frame_height_ == height()) return frame_;
  const QFontMetrics m = fontMetrics();
  Frame f;
  f.key = kMargin + HeaderHeight(m, width() - 2 * kMargin, HeaderText()) + 6;
  f.axis = DrawSliceKey(nullptr, m, QRectF(kMargin, f.key, width() - 2 * kMargin, 0), splits_) + 8;
  f.top = f.axis + m.height() + 4;
  f.left = kMargin + m.height() + 6;
  const double avail_w = width() - f.left - kMargin, avail_h = height() - f.top - kMargin;
  const int64_t blocks = Blocks();
  f.label = blocks > 1 ? m.height() + 2 : 0;
  // Blocks on a near-square arrangement that keeps slices as large as it can.
  double best = -1;
  for (int64_t cols = 1; cols <= blocks; ++cols) {
    const int64_t rows = (blocks + cols - 1) / cols;
    const double w = (avail_w - kGap * static_cast<double>(cols - 1)) / static_cast<double>(cols);
    const double h = (avail_h - (kGap + f.label) * static_cast<double>(rows) + kGap) / static_cast<double>(rows);
    const double side = std::min(w / static_cast<double>(SliceCols()), h / static_cast<double>(SliceRows()));
    if (w > 0 && h > 0 && side > best) {
      best = side;
      f.block_cols = cols;
      f.block_rows = rows;
      f.block_w = w;
      f.block_h = h;
    }
  }
  frame_ = f;
  frame_width_ = width();
  frame_height_ = height();
  return f;
}

QRectF TensorMapView::SliceRect(int64_t block, int64_t row, int64_t col) const {
  const Frame f = FrameOf();
  const double bx = f.left + static_cast<double>(block % f.block_cols) * (f.block_w + kGap);
  const double by = f.top + static_cast<double>(block / f.block_cols) * (f.block_h + f.label + kGap) + f.label;
  const double w = f.block_w / static_cast<double>(SliceCols()), h = f.block_h / static_cast<double>(SliceRows());
  return {bx + static_cast<double>(col) * w, by + static_cast<double>(row) * h, w, h};
}

QString TensorMapView::ToolTipAt(QPoint pos) const {
  const TensorView* t = tensor();
  if (!t) return {};
  const Frame f = FrameOf();
  const double x = pos.x() - f.left, y = pos.y() - f.top;
  if (x < 0 || y < 0 || f.block_w <= 0 || f.block_h <= 0) return {};  // no room for the blocks
  const int64_t bc = static_cast<int64_t>(x / (f.block_w + kGap)),
                br = static_cast<int64_t>(y / (f.block_h + f.label + kGap));
  const int64_t block = br * f.block_cols + bc;
  if (bc >= f.block_cols || block >= Blocks()) return {};
  const QRectF first = SliceRect(block, 0, 0);
  const double in_x = pos.x() - first.left(), in_y = pos.y() - first.top();
  if (in_x < 0 || in_y < 0) return {};
  const int64_t c = static_cast<int64_t>(in_x / first.width()), r = static_cast<int64_t>(in_y / first.height());
  if (r >= SliceRows() || c >= SliceCols()) return {};
  const std::vector<int64_t> s = SliceAt(block, r, c);
  return QString::fromStdString(fmt::format("{} slice {} = {}\nheld by ranks {}", t->name, ShapeText(s),
                                            SliceRanges(*t, s), RankList(HoldersOf(s), 16)));
}

void TensorMapView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  DrawHeader(p, QRectF(kMargin, kMargin, width() - 2 * kMargin, 0), HeaderText());
  const TensorView* t = tensor();
  if (!t) return;
  const Frame f = FrameOf();
  const QFontMetrics m = p.fontMetrics();
  DrawSliceKey(&p, m, QRectF(kMargin, f.key, width() - 2 * kMargin, 0), splits_);
  // What the rows and columns of a block stand for.
  p.setPen(QColor(80, 80, 80));
  auto dim_name = [&](int d) {
    return QString("tensor dim %1 (%2 elements, %3 slices)").arg(d).arg(t->shape[d]).arg(splits_[d]);
  };
  p.drawText(QRectF(f.left, f.axis, width() - f.left - kMargin, m.height()), Qt::AlignLeft,
             col_dim_ >= 0 ? "columns: " + dim_name(col_dim_) + "  \u2192" : "the whole tensor on every device");
  if (row_dim_ >= 0) {
    p.save();
    p.translate(kMargin, f.top + std::min(f.block_h + f.label, height() - f.top) / 2);
    p.rotate(-90);
    const QString text = "\u2190  rows: " + dim_name(row_dim_);
    const double w = m.horizontalAdvance(text);
    p.drawText(QRectF(-w / 2, 0, w + 2, m.height()), Qt::AlignCenter, text);
    p.restore();
  }
  const int64_t rows = SliceRows(), cols = SliceCols();
  const QRectF first = SliceRect(0, 0, 0);
  const bool labels = first.width() > 90 && first.height() > 2.2 * m.height();
  const bool borders = first.width() >= 4 && first.height() >= 4;  // thinner slices: colour only
  // Slices thinner than a pixel share it: draw one of each pixel's worth.
  const int64_t row_step = std::max<int64_t>(1, static_cast<int64_t>(1 / first.height()));
  const int64_t col_step = std::max<int64_t>(1, static_cast<int64_t>(1 / first.width()));
  for (int64_t b = 0; b < Blocks(); ++b) {
    const QRectF corner = SliceRect(b, 0, 0);
    if (f.label > 0) {
      p.setPen(QColor(60, 60, 60));
      p.drawText(QRectF(corner.left(), corner.top() - f.label, f.block_w, f.label), Qt::AlignLeft | Qt::AlignVCenter,
                 BlockLabel(b));
    }
    for (int64_t r = 0; r < rows; r += row_step)
      for (int64_t c = 0; c < cols; c += col_step) {
        QRectF rect = SliceRect(b, r, c);
        rect.setSize({rect.width() * static_cast<double>(std::min(col_step, cols - c)),
                      rect.height() * static_cast<double>(std::min(row_step, rows - r))});
        // The colour of the slice is that of its devices in the device-matrix view.
        const QColor color = SliceColor(SliceAt(b, r, c), splits_);
        p.fillRect(rect, color);
        if (borders) {
          p.setPen(QColor(255, 255, 255));
          p.drawRect(rect);
        }
        if (labels) {
          p.setPen(TextOn(color));
          p.drawText(rect.adjusted(4, 2, -4, -2), Qt::AlignCenter | Qt::TextWordWrap, SliceLabel(b, r, c));
        }
      }
    p.setPen(QColor(40, 40, 40));
    p.drawRect(QRectF(corner.left(), corner.top(), f.block_w, f.block_h));
  }
}

bool TensorMapView::event(QEvent* e) {
  return ShowToolTip(this, e, [this](QPoint p) { return ToolTipAt(p); }) || QWidget::event(e);
}

void TensorMapView::changeEvent(QEvent* e) {
  if (e->type() == QEvent::FontChange || e->type() == QEvent::StyleChange) {
    frame_width_ = -1;
    update();
  }
  QWidget::changeEvent(e);
}

}  // namespace shardlab::gui
