#include "cli/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

namespace shardlab::cli {
namespace {

constexpr double kFirstDraw = 0.5, kRedraw = 0.1;  // seconds

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string Duration(double seconds) {
  if (seconds < 60) return fmt::format("{:.0f} s", seconds);
  if (seconds < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(seconds / 60), std::fmod(seconds, 60));
  return fmt::format("{:.0f} h {:02.0f} min", std::floor(seconds / 3600), std::fmod(seconds, 3600) / 60);
}

// The progress whose line is on the terminal now (one at a time: stderr has one last line).
Progress* drawing = nullptr;

// SHARDLAB_PROGRESS=always: drawn wherever stderr goes, from the first item (tests, logs).
bool Always() {
  const char* setting = std::getenv("SHARDLAB_PROGRESS");
  return setting && std::strcmp(setting, "always") == 0;
}

}  // namespace

bool Progress::Shown() {
  const char* setting = std::getenv("SHARDLAB_PROGRESS");
  if (setting && std::strcmp(setting, "never") == 0) return false;
  return Always() || isatty(STDERR_FILENO);
}

Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)),
      total_(total),
      shown_(Shown()),
      first_draw_(Always() ? 0 : kFirstDraw),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { Finish(); }

void Progress::Done(const std::string& item, const std::string& best) {
  ++done_;
  const double fraction = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1;
  // The last item redraws a bar already shown, so it ends full.
  Draw(fraction, fmt::format("{}/{}", done_, total_), best.empty() ? item : "best " + best, drawn_ && done_ == total_);
}

void Progress::Update(double fraction, const std::string& status) {
  // The end redraws a bar already shown, so it ends full.
  Draw(fraction, fmt::format("{:.0f}%", 100 * fraction), status, drawn_ && fraction >= 1);
}

void Progress::Draw(double fraction, const std::string& count, const std::string& note, bool force) {
  if (!shown_) return;
  const double elapsed = Since(start_);
  if (elapsed < first_draw_ && !force) return;
  if (drawn_ && Since(last_draw_) < kRedraw && !force) return;
  last_draw_ = std::chrono::steady_clock::now();
  drawn_ = true;
  drawing = this;
  constexpr size_t kWidth = 24;
  const size_t filled = static_cast<size_t>(kWidth * std::clamp(fraction, 0.0, 1.0));
  std::string eta = "ETA --";
  if (fraction > 0.02) eta = "ETA " + Duration(elapsed * (1 - fraction) / fraction);
  std::string line = fmt::format("{} [{}{}] {}  {}  {}", label_, std::string(filled, '#'),
                                 std::string(kWidth - filled, '.'), count, Duration(elapsed), eta);
  if (!note.empty()) line += "  " + note;
  if (line.size() > 118) line = line.substr(0, 115) + "...";
  std::cerr << "\r\033[K" << line << std::flush;
}

void Progress::Finish() {
  if (drawn_) std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
  if (drawing == this) drawing = nullptr;
}

void Progress::Interrupt() {
  if (drawing) drawing->Finish();
}

PhaseProgress::PhaseProgress(std::string label)
    : progress_(std::move(label), 0), listener_([this](double fraction) { progress_.Update(fraction); }) {}

}  // namespace shardlab::cli
