// Progress of a long command on stderr: a redrawn bar with the best result
// so far and an ETA on a terminal, one plain line per finished item
// otherwise.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace shardlab::cli {

class Progress {
 public:
  Progress(std::string label, size_t total);
  // One more item done; `item` names it, `best` is the best result so far.
  void Done(const std::string& item, const std::string& best);
  void Finish();

 private:
  std::string label_;
  size_t total_ = 0;
  size_t done_ = 0;
  bool terminal_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shardlab::cli
