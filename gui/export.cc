#include "gui/export.h"

#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <stdexcept>

namespace shardlab::gui {

void ExportView(QWidget& view, const QString& path) {
  const QString temporary = path + ".part";
  const QString suffix = QFileInfo(path).suffix().toLower();
  bool ok = false;
  if (suffix == "svg") {
    QSvgGenerator svg;
    svg.setFileName(temporary);
    svg.setSize(view.size());
    svg.setViewBox(QRect(QPoint(0, 0), view.size()));
    svg.setTitle("shardlab");
    QPainter painter;
    ok = painter.begin(&svg);
    if (ok) {
      view.render(&painter);
      ok = painter.end();
    }
  } else if (suffix == "png") {
    ok = view.grab().toImage().save(temporary, "PNG");
  } else {
    throw std::runtime_error(path.toStdString() + ": export as .png or .svg");
  }
  if (!ok || QFileInfo(temporary).size() == 0) {
    QFile::remove(temporary);
    throw std::runtime_error("cannot write " + path.toStdString());
  }
  QFile::remove(path);
  if (!QFile::rename(temporary, path)) {
    QFile::remove(temporary);
    throw std::runtime_error("cannot write " + path.toStdString());
  }
}

}  // namespace shardlab::gui
