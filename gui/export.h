// Exports a view as PNG or SVG (by the file's extension), written to a
// temporary name and renamed, so a failed export leaves no file.
#pragma once

#include <QString>
#include <QWidget>

namespace shardlab::gui {

// Throws std::runtime_error naming the file when it cannot be written.
void ExportView(QWidget& view, const QString& path);

}  // namespace shardlab::gui
