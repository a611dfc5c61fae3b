// The window test's image tool:
//   gui_image_tool grab OUT.png        the X screen's pixels (DISPLAY), as the X server shows them
//   gui_image_tool fingerprint         what rendering depends on: Qt's version, the default font
//                                      and its pixel size, the screen's depth and pixel ratio
//   gui_image_tool diff A.png B.png F  exit 0 when at most a fraction F of the pixels differ
//                                      (any channel by more than 48 of 255), else 1; prints the fraction
// Screenshots of a real window are compared with committed references within
// this tolerance: anti-aliasing and font hinting may move a few pixels.
#include <QFontInfo>
#include <QGuiApplication>
#include <QImage>
#include <QPixmap>
#include <QScreen>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int Grab(const char* out) {
  QScreen* screen = QGuiApplication::primaryScreen();
  if (!screen) {
    std::fprintf(stderr, "gui_image_tool: no screen\n");
    return 2;
  }
  const QPixmap pixels = screen->grabWindow(0);
  if (pixels.isNull() || !pixels.save(out, "PNG")) {
    std::fprintf(stderr, "gui_image_tool: cannot grab the screen into %s\n", out);
    return 2;
  }
  return 0;
}

int Fingerprint() {
  const QFontInfo font(QGuiApplication::font());
  QScreen* screen = QGuiApplication::primaryScreen();
  std::printf("Qt %s; font %s %dpx; depth %d; pixel ratio %g\n", qVersion(), font.family().toUtf8().constData(),
              font.pixelSize(), screen ? screen->depth() : 0, screen ? screen->devicePixelRatio() : 0.0);
  return 0;
}

int Diff(const char* a_path, const char* b_path, double allowed) {
  const QImage a = QImage(a_path).convertToFormat(QImage::Format_RGB32);
  const QImage b = QImage(b_path).convertToFormat(QImage::Format_RGB32);
  if (a.isNull() || b.isNull()) {
    std::fprintf(stderr, "gui_image_tool: cannot read %s\n", a.isNull() ? a_path : b_path);
    return 2;
  }
  if (a.size() != b.size()) {
    std::printf("sizes differ: %dx%d and %dx%d\n", a.width(), a.height(), b.width(), b.height());
    return 1;
  }
  long differing = 0;
  for (int y = 0; y < a.height(); ++y) {
    const QRgb* pa = reinterpret_cast<const QRgb*>(a.constScanLine(y));
    const QRgb* pb = reinterpret_cast<const QRgb*>(b.constScanLine(y));
    for (int x = 0; x < a.width(); ++x) {
      const int d = std::max({std::abs(qRed(pa[x]) - qRed(pb[x])), std::abs(qGreen(pa[x]) - qGreen(pb[x])),
                              std::abs(qBlue(pa[x]) - qBlue(pb[x]))});
      differing += d > 48;
    }
  }
  const double fraction = static_cast<double>(differing) / (static_cast<double>(a.width()) * a.height());
  std::printf("%.5f of the pixels differ (allowed %.5f)\n", fraction, allowed);
  return fraction <= allowed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "grab" && argc == 3) {
    QGuiApplication app(argc, argv);
    return Grab(argv[2]);
  }
  if (command == "fingerprint" && argc == 2) {
    QGuiApplication app(argc, argv);
    return Fingerprint();
  }
  if (command == "diff" && argc == 5) return Diff(argv[2], argv[3], std::atof(argv[4]));
  std::fprintf(stderr, "usage: gui_image_tool grab OUT.png | fingerprint | diff A.png B.png MAX_FRACTION\n");
  return 2;
}
