#include "cli/progress.h"

#include <iostream>
#include <unistd.h>

#include <fmt/format.h>

namespace shardlab::cli {
Progress::Progress(std::string label, size_t total)
    : label_(std::move(label)),
      total_(total),
      terminal_(isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()) {}

void Progress::Done(const std::string& item, const std::string& best) {
  ++done_;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done_ ? elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_) : 0;
  if (terminal_) {
    const size_t width = 24, filled = total_ ? width * done_ / total_ : width;
    std::cerr << fmt::format("\r{} [{}{}] {}/{}{}  ETA {:.0f} s   ", label_, std::string(filled, '#'),
                             std::string(width - filled, '.'), done_, total_, best.empty() ? "" : "  best " + best, eta)
              << std::flush;
  } else {
    std::cerr << fmt::format("{} {}/{}: {} ({}ETA {:.0f} s)\n", label_, done_, total_, item,
                             best.empty() ? "" : "best " + best + ", ", eta);
  }
}

void Progress::Finish() {
  if (terminal_ && done_ > 0) std::cerr << "\n";
}

}  // namespace shardlab::cli
