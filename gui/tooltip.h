// The views' tooltips: each view says what text belongs to a point; this
// shows it on Qt's ToolTip event (or hides the tooltip over nothing).
#pragma once

#include <QEvent>
#include <QHelpEvent>
#include <QToolTip>
#include <QWidget>

namespace shardlab::gui {

// True when `e` was a ToolTip event (handled).
template <typename TextAt>
bool ShowToolTip(QWidget* widget, QEvent* e, TextAt text_at) {
  if (e->type() != QEvent::ToolTip) return false;
  auto* help = static_cast<QHelpEvent*>(e);
  const QString text = text_at(help->pos());
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(help->globalPos(), text, widget);
  return true;
}

}  // namespace shardlab::gui
