// "Did you mean": the known word nearest to a mistyped one.
#pragma once

#include <string>
#include <vector>

namespace sluice::cli {

// The candidate nearest to `word` by edit distance, if it is close enough to be the one meant
// (at most 2 edits, and fewer than half of `word`'s letters); empty otherwise.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace sluice::cli
