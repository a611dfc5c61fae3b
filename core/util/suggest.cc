#include "core/util/suggest.h"

#include <algorithm>
#include <cctype>

namespace shardlab {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_distance = 0;
  for (const auto& candidate : candidates) {
    // The distance is at least the length difference: a far longer or shorter
    // word is no typo of this candidate (and a huge word costs nothing).
    const size_t longer = std::max(word.size(), candidate.size());
    const size_t difference = longer - std::min(word.size(), candidate.size());
    if (difference > std::max<size_t>(2, longer / 3)) continue;
    const int d = EditDistance(word, candidate);
    if (best.empty() || d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  const int longest = static_cast<int>(std::max(word.size(), best.size()));
  const int limit = std::max(2, longest / 3);
  if (best_distance <= limit) return best;
  // A shortened name ("semi_auto" for "semi_auto_parallel") is a plausible slip too.
  if (word.size() >= 4)
    for (const auto& candidate : candidates)
      if (candidate.find(word) != std::string::npos) return candidate;
  return std::string();
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string match = ClosestMatch(word, candidates);
  return match.empty() ? std::string() : " (did you mean '" + match + "'?)";
}

}  // namespace shardlab
