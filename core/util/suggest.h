// Closest-match suggestions for misspelled keys and enum values
// ("did you mean 'pipeline_stages'?").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardlab {

// Edit distance between two strings (insert, delete, substitute: cost 1 each).
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a
// plausible typo (distance at most a third of the longer word, at least 2) or
// an abbreviation (a candidate containing `word`).
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "" when there is no close candidate.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace shardlab
