#include "gui/device_matrix_view.h"

#include <QEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gui/chart_parts.h"
#include "gui/palette.h"
#include "gui/tooltip.h"

namespace shardlab::gui {
namespace {

// The global ranks of an operator's stage: a range when they are consecutive.
std::string StageRankText(const OperatorView& o, int64_t devices) {
  if (o.placement.contiguous()) return fmt::format("{}..{}", o.Rank(0), o.Rank(devices - 1));
  std::vector<int64_t> ranks;
  for (int64_t l = 0; l < devices; ++l) ranks.push_back(o.Rank(l));
  return RankList(ranks, 4);
}

// Margins around the grid, the tile label's height, the gap between tiles,
// the largest cell side, the smallest one drawn per device, the most a cell's
// width and height may differ by.
constexpr double kMargin = 10, kLabel = 16, kGap = 14, kMaxCell = 400, kMinCell = 4, kMaxAspect = 8;

}  // namespace

DeviceMatrixView::DeviceMatrixView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(400, 300);
}

void DeviceMatrixView::SetLayouts(const RunLayouts* layouts) {
  layouts_ = layouts;
  op_ = -1;
  grid_.reset();
  const int op = layouts_ && !layouts_->ops.empty() ? DefaultOperator(*layouts_) : -1;
  Show(op, op >= 0 ? DefaultTensor(layouts_->ops[op]) : 0);
}

void DeviceMatrixView::Show(int op, int tensor) {
  if (!layouts_ || op < 0 || op >= static_cast<int>(layouts_->ops.size())) {
    op_ = -1;
    grid_.reset();
    ComputeIds();
    update();
    return;
  }
  if (op != op_) {
    grid_ = std::make_unique<DeviceGrid>(layouts_->ops[op].device_matrix);
    zoom_ = 1;
    pan_ = {};
    outline_ = -1;
    focus_ = -1;
  }
  op_ = op;
  const int tensors = static_cast<int>(layouts_->ops[op].tensors.size());
  tensor_ = tensors == 0 ? -1 : std::clamp(tensor, 0, tensors - 1);
  ComputeIds();
  update();
}

void DeviceMatrixView::SetOutline(int outline) {
  outline_ = outline;
  ComputeIds();
  update();
}

void DeviceMatrixView::SetZoom(double zoom) {
  zoom_ = std::clamp(zoom, 1.0, 200.0);
  update();
}

const OperatorView* DeviceMatrixView::op() const { return op_ >= 0 ? &layouts_->ops[op_] : nullptr; }

const TensorView* DeviceMatrixView::tensor() const {
  const OperatorView* o = op();
  return o && tensor_ >= 0 ? &o->tensors[tensor_] : nullptr;
}

QString DeviceMatrixView::HeaderText() const {
  const OperatorView* o = op();
  if (!o) return "no operator selected";
  std::string text =
      fmt::format("{} ({}), stage {}: device matrix {} over {} devices (ranks {})", o->name, o->type, o->stage,
                  ShapeText(o->device_matrix), grid_->devices(), StageRankText(*o, grid_->devices()));
  if (const TensorView* t = tensor()) {
    Shape splits = SplitsOf(*o, *t);
    int64_t slices = 1;
    for (int64_t s : splits) slices *= s;
    const int64_t holders = grid_->devices() / std::max<int64_t>(slices, 1);
    text += fmt::format("\ncolour: slice of {} ({}) shape {} tensor map {} slice {}: {} slice{}, each on {} device{}",
                        t->name, t->role, ShapeText(t->shape), ShapeText(t->map), ShapeText(t->slice), slices,
                        slices == 1 ? "" : "s", holders, holders == 1 ? "" : "s");
  }
  if (outline_ == 0) text += "\noutline: devices holding the same slice";
  if (outline_ >= 1 && outline_ <= static_cast<int>(o->groups.size()))
    text += "\noutline: " + o->groups[outline_ - 1].label;
  return QString::fromStdString(text);
}

QString DeviceMatrixView::NoteText() const {
  const int64_t b = BlockSize();
  if (b > 1) return QString("%1x%1 devices per cell; zoom in (wheel) to see each device").arg(b);
  return grid_ ? "hover a device for its slice; click it to outline its group" : "";
}

std::vector<LegendItem> DeviceMatrixView::LegendItems() const {
  std::vector<LegendItem> items;
  const OperatorView* o = op();
  if (outline_ == 0)
    items.push_back({"border: between devices holding different slices", Qt::black, LegendMark::kLine});
  if (o && outline_ >= 1 && outline_ <= static_cast<int>(o->groups.size()))
    items.push_back({QString::fromStdString("border: between groups of the " + o->groups[outline_ - 1].label),
                     Qt::black, LegendMark::kLine});
  return items;
}

DeviceMatrixView::Frame DeviceMatrixView::FrameOf() const {
  if (frame_width_ == width()) return frame_;
  const QFontMetrics m = fontMetrics();
  Frame f;
  f.key = kMargin + HeaderHeight(m, width() - 2 * kMargin, HeaderText()) + 6;
  double y = f.key;
  if (const TensorView* t = tensor())
    y = DrawSliceKey(nullptr, m, QRectF(kMargin, y, width() - 2 * kMargin, 0), SplitsOf(*op(), *t)) + 6;
  f.legend = y;
  y = DrawLegend(nullptr, m, QRectF(kMargin, y, width() - 2 * kMargin, 0), LegendItems()) + 6;
  f.column_name = y;
  f.top = y + 2 * m.height() + 4;                                   // the columns' name, then their indices
  f.left = kMargin + m.height() + 6 + m.horizontalAdvance("0000");  // the rows' name, rotated, then their indices
  f.bottom = m.height() + 8;                                        // the note
  frame_ = f;
  frame_width_ = width();
  return f;
}

DeviceMatrixView::Geometry DeviceMatrixView::Layout() const {
  Geometry g;
  if (!grid_) return g;
  const Frame f = FrameOf();
  const double tiles_w = static_cast<double>(grid_->tile_cols()), tiles_h = static_cast<double>(grid_->tile_rows());
  const double avail_w = width() - f.left - kMargin - kGap * (tiles_w - 1);
  g.label = grid_->tile_rows() * grid_->tile_cols() > 1 ? kLabel : 0;
  const double avail_h = height() - f.top - f.bottom - (g.label + kGap) * tiles_h + kGap;
  // Fill the view: cells may be wider than tall (or taller than wide), within kMaxAspect.
  double w = std::min(avail_w / (tiles_w * static_cast<double>(grid_->cell_cols())), kMaxCell);
  double h = std::min(avail_h / (tiles_h * static_cast<double>(grid_->cell_rows())), kMaxCell);
  w = std::max(std::min(w, kMaxAspect * h), 0.05);
  h = std::max(std::min(h, kMaxAspect * w), 0.05);
  g.cell_w = w * zoom_;
  g.cell_h = h * zoom_;
  const double small = std::min(g.cell_w, g.cell_h);
  g.block = small >= kMinCell ? 1 : static_cast<int64_t>(std::ceil(kMinCell / small));
  g.tile_w = g.cell_w * static_cast<double>(grid_->cell_cols());
  g.tile_h = g.cell_h * static_cast<double>(grid_->cell_rows());
  g.x0 = f.left + pan_.x();
  g.y0 = f.top + pan_.y();
  return g;
}

int64_t DeviceMatrixView::BlockSize() const { return Layout().block; }

int64_t DeviceMatrixView::CellCount() const {
  if (!grid_) return 0;
  const int64_t b = BlockSize();
  const int64_t per_tile = ((grid_->cell_rows() + b - 1) / b) * ((grid_->cell_cols() + b - 1) / b);
  return per_tile * grid_->tile_rows() * grid_->tile_cols();
}

QRectF DeviceMatrixView::CellRect(int64_t local) const {
  const Geometry g = Layout();
  const DeviceGrid::Place p = grid_->PlaceOf(local);
  const double tx = g.x0 + static_cast<double>(p.tile_col) * (g.tile_w + kGap);
  const double ty = g.y0 + static_cast<double>(p.tile_row) * (g.tile_h + g.label + kGap) + g.label;
  return {tx + static_cast<double>(p.col) * g.cell_w, ty + static_cast<double>(p.row) * g.cell_h, g.cell_w, g.cell_h};
}

int64_t DeviceMatrixView::LocalAt(QPoint pos) const {
  if (!grid_) return -1;
  const Geometry g = Layout();
  const double x = pos.x() - g.x0, y = pos.y() - g.y0;
  if (x < 0 || y < 0) return -1;
  DeviceGrid::Place p;
  p.tile_col = static_cast<int64_t>(x / (g.tile_w + kGap));
  p.tile_row = static_cast<int64_t>(y / (g.tile_h + g.label + kGap));
  const double in_x = x - static_cast<double>(p.tile_col) * (g.tile_w + kGap);
  const double in_y = y - static_cast<double>(p.tile_row) * (g.tile_h + g.label + kGap) - g.label;
  if (in_x < 0 || in_y < 0 || in_x >= g.tile_w || in_y >= g.tile_h) return -1;
  p.col = static_cast<int64_t>(in_x / g.cell_w);
  p.row = static_cast<int64_t>(in_y / g.cell_h);
  return grid_->DeviceAt(p);
}

void DeviceMatrixView::ComputeIds() {
  frame_width_ = -1;  // the header and legends change with the choice
  slice_ids_.assign(grid_ ? grid_->devices() : 0, 0);
  group_ids_.assign(slice_ids_.size(), 0);
  colors_.assign(slice_ids_.size(), SliceColor({}, {}));
  const OperatorView* o = op();
  if (!o) return;
  const TensorView* t = tensor();
  const Shape splits = t ? SplitsOf(*o, *t) : Shape{};
  for (int64_t l = 0; l < grid_->devices(); ++l) {
    const std::vector<int64_t> c = grid_->Coordinates(l);
    if (t) {
      slice_ids_[l] = SliceId(*o, *t, c);
      colors_[l] = SliceColor(SliceIndex(*o, *t, c), splits);
    }
    if (outline_ == 0) group_ids_[l] = slice_ids_[l];
    if (outline_ >= 1 && outline_ <= static_cast<int>(o->groups.size()))
      group_ids_[l] = GroupIdAlong(o->device_matrix, c, o->groups[outline_ - 1].dims);
  }
}

QString DeviceMatrixView::ToolTipAt(QPoint pos) const {
  const int64_t local = LocalAt(pos);
  if (local < 0) return {};
  const OperatorView* o = op();
  const int64_t block = BlockSize();
  const int64_t rank = o->Rank(local);
  const std::vector<int64_t> c = grid_->Coordinates(local);
  std::string text;
  if (block > 1) {
    text = fmt::format("a block of up to {0}x{0} devices from rank {1}; zoom in to see each\n", block, rank);
  }
  text += fmt::format("rank {} (stage {}, position {})\ncoordinates {} in device matrix {}\nserver {}", rank, o->stage,
                      local, ShapeText(c), ShapeText(o->device_matrix), rank / layouts_->devices_per_server);
  if (const TensorView* t = tensor()) {
    const std::vector<int64_t> s = SliceIndex(*o, *t, c);
    std::vector<int64_t> holders;
    for (int64_t l = 0; l < grid_->devices(); ++l)
      if (slice_ids_[l] == slice_ids_[local]) holders.push_back(o->Rank(l));
    text += fmt::format("\n{} slice {} = {}\nsame slice on ranks {}", t->name, ShapeText(s), SliceRanges(*t, s),
                        RankList(holders));
  }
  return QString::fromStdString(text);
}

void DeviceMatrixView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  const Frame f = FrameOf();
  const QFontMetrics m = p.fontMetrics();
  DrawHeader(p, QRectF(kMargin, kMargin, width() - 2 * kMargin, 0), HeaderText());
  if (const TensorView* t = tensor())
    DrawSliceKey(&p, m, QRectF(kMargin, f.key, width() - 2 * kMargin, 0), SplitsOf(*op(), *t));
  DrawLegend(&p, m, QRectF(kMargin, f.legend, width() - 2 * kMargin, 0), LegendItems());
  p.setPen(QColor(90, 90, 90));
  p.drawText(QRectF(kMargin, height() - f.bottom + 2, width() - 2 * kMargin, m.height()), Qt::AlignLeft, NoteText());
  if (!grid_) return;
  const Geometry g = Layout();
  // What the rows and columns of a tile stand for.
  const QString columns = QString::fromStdString(grid_->ColumnAxisName());
  if (!columns.isEmpty())
    p.drawText(QRectF(f.left, f.column_name, width() - f.left - kMargin, m.height()), Qt::AlignLeft,
               "columns: device matrix " + columns + "  \u2192");
  const QString rows = QString::fromStdString(grid_->RowAxisName());
  if (!rows.isEmpty()) {
    p.save();
    p.translate(kMargin, f.top + std::min(g.tile_h, height() - f.top - f.bottom) / 2);
    p.rotate(-90);
    const QString text = "\u2190  rows: " + rows;
    const double w = m.horizontalAdvance(text);
    p.drawText(QRectF(-w / 2, 0, w + 2, m.height()), Qt::AlignCenter, text);
    p.restore();
  }
  p.setClipRect(QRectF(0, f.column_name + m.height(), width(), height() - f.bottom - f.column_name - m.height()));
  const int64_t b = g.block;
  // Row and column indices beside the first tile, where they fit.
  if (b == 1) {
    p.setPen(QColor(90, 90, 90));
    if (grid_->col_dim() >= 0 && g.cell_w >= m.horizontalAdvance("000"))
      for (int64_t c = 0; c < grid_->cell_cols(); ++c)
        p.drawText(QRectF(g.x0 + static_cast<double>(c) * g.cell_w, g.y0 - m.height() - 2, g.cell_w, m.height()),
                   Qt::AlignCenter, QString::number(c));
    if (grid_->row_dim() >= 0 && g.cell_h >= m.height())
      for (int64_t r = 0; r < grid_->cell_rows(); ++r)
        p.drawText(QRectF(g.x0 - m.horizontalAdvance("0000") - 4, g.y0 + g.label + static_cast<double>(r) * g.cell_h,
                          m.horizontalAdvance("0000"), g.cell_h),
                   Qt::AlignRight | Qt::AlignVCenter, QString::number(r));
  }
  for (int64_t tr = 0; tr < grid_->tile_rows(); ++tr)
    for (int64_t tc = 0; tc < grid_->tile_cols(); ++tc) {
      const double tx = g.x0 + static_cast<double>(tc) * (g.tile_w + kGap);
      const double ty = g.y0 + static_cast<double>(tr) * (g.tile_h + g.label + kGap) + g.label;
      if (tx > width() || ty > height() || tx + g.tile_w < 0 || ty + g.tile_h < 0) continue;
      const std::string label = grid_->TileLabel(tr, tc);
      if (!label.empty()) {
        p.setPen(QColor(60, 60, 60));
        p.drawText(QRectF(tx, ty - g.label, std::max(g.tile_w, 60.0), g.label), Qt::AlignLeft | Qt::AlignVCenter,
                   QString::fromStdString(label));
      }
      std::vector<QLineF> outline;  // edges between different groups, drawn at once
      const bool rank_labels = b == 1 && g.cell_w >= m.horizontalAdvance("00000") && g.cell_h >= m.height();
      for (int64_t r = 0; r < grid_->cell_rows(); r += b)
        for (int64_t c = 0; c < grid_->cell_cols(); c += b) {
          const int64_t local = grid_->DeviceAt({tr, tc, r, c});
          const double w = static_cast<double>(std::min(b, grid_->cell_cols() - c)) * g.cell_w;
          const double h = static_cast<double>(std::min(b, grid_->cell_rows() - r)) * g.cell_h;
          const QRectF cell(tx + static_cast<double>(c) * g.cell_w, ty + static_cast<double>(r) * g.cell_h, w, h);
          p.fillRect(cell, colors_[local]);
          if (rank_labels) {
            p.setPen(TextOn(colors_[local]));
            p.drawText(cell, Qt::AlignCenter, QString::number(layouts_->ops[op_].Rank(local)));
          }
          if (outline_ >= 0 && b == 1) {
            const int64_t group = OutlineGroupOf(local);
            const int64_t right = grid_->DeviceAt({tr, tc, r, c + 1}), below = grid_->DeviceAt({tr, tc, r + 1, c});
            if (right >= 0 && OutlineGroupOf(right) != group) outline.emplace_back(cell.topRight(), cell.bottomRight());
            if (below >= 0 && OutlineGroupOf(below) != group)
              outline.emplace_back(cell.bottomLeft(), cell.bottomRight());
          }
        }
      // Cell borders as grid lines, one per row and column of the tile.
      if (b == 1 && std::min(g.cell_w, g.cell_h) >= 8) {
        std::vector<QLineF> lines;
        for (int64_t r = 1; r < grid_->cell_rows(); ++r)
          lines.emplace_back(tx, ty + static_cast<double>(r) * g.cell_h, tx + g.tile_w,
                             ty + static_cast<double>(r) * g.cell_h);
        for (int64_t c = 1; c < grid_->cell_cols(); ++c)
          lines.emplace_back(tx + static_cast<double>(c) * g.cell_w, ty, tx + static_cast<double>(c) * g.cell_w,
                             ty + g.tile_h);
        p.setPen(QColor(255, 255, 255));
        p.drawLines(lines.data(), static_cast<int>(lines.size()));
      }
      if (!outline.empty()) {
        p.setPen(QPen(QColor(20, 20, 20), 2));
        p.drawLines(outline.data(), static_cast<int>(outline.size()));
      }
      p.setPen(QColor(40, 40, 40));
      p.drawRect(QRectF(tx, ty, g.tile_w, g.tile_h));
    }
  // The focused device's group.
  if (focus_ >= 0 && outline_ >= 0) {
    const int64_t group = OutlineGroupOf(focus_);
    p.setPen(QPen(Qt::black, 3));
    for (int64_t l = 0; l < grid_->devices(); ++l)
      if (OutlineGroupOf(l) == group) p.drawRect(CellRect(l).adjusted(1.5, 1.5, -1.5, -1.5));
  }
}

void DeviceMatrixView::wheelEvent(QWheelEvent* event) {
  const double factor = event->angleDelta().y() > 0 ? 1.25 : 0.8;
  const double old = zoom_;
  zoom_ = std::clamp(zoom_ * factor, 1.0, 200.0);
  // Keep the point under the cursor in place.
  const Frame f = FrameOf();
  const QPointF at = event->position() - QPointF(f.left, f.top);
  pan_ = at - (at - pan_) * (zoom_ / old);
  if (zoom_ == 1) pan_ = {};
  update();
}

void DeviceMatrixView::mousePressEvent(QMouseEvent* event) {
  drag_from_ = event->pos();
  drag_pan_ = pan_;
  const int64_t local = LocalAt(event->pos());
  if (local >= 0 && op()) {
    focus_ = local;
    emit deviceFocused(op()->Rank(local));
    update();
  }
}

void DeviceMatrixView::mouseMoveEvent(QMouseEvent* event) {
  if (!(event->buttons() & Qt::LeftButton)) return;
  pan_ = drag_pan_ + QPointF(event->pos() - drag_from_);
  update();
}

bool DeviceMatrixView::event(QEvent* e) {
  return ShowToolTip(this, e, [this](QPoint p) { return ToolTipAt(p); }) || QWidget::event(e);
}

void DeviceMatrixView::changeEvent(QEvent* e) {
  if (e->type() == QEvent::FontChange || e->type() == QEvent::StyleChange) {
    frame_width_ = -1;
    update();
  }
  QWidget::changeEvent(e);
}

}  // namespace shardlab::gui
