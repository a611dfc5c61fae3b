#include "core/util/progress_report.h"

#include <algorithm>
#include <utility>

namespace shardlab {
namespace {

std::function<void(double)>& Listener() {
  static std::function<void(double)> listener;
  return listener;
}

}  // namespace

ScopedProgressListener::ScopedProgressListener(std::function<void(double)> listener)
    : previous_(std::exchange(Listener(), std::move(listener))) {}

ScopedProgressListener::~ScopedProgressListener() { Listener() = std::move(previous_); }

ScopedProgressRange::ScopedProgressRange(double begin, double end)
    : listener_(Listener() ? std::function<void(double)>([outer = Listener(), begin, end](double fraction) {
        outer(begin + fraction * (end - begin));
      })
                           : nullptr) {}

void ReportProgress(double done, double total) {
  if (Listener() && total > 0) Listener()(std::clamp(done / total, 0.0, 1.0));
}

}  // namespace shardlab
