// Sparklines: a series of counts drawn as one line of block characters, for `stats --watch`.
#pragma once

#include <string>
#include <vector>

namespace sluice::cli {

// One block character per sample, scaled from zero to the largest sample ("▁" is zero or the
// series is all zeros, "█" the largest). Negative samples count as zero.
std::string sparkline(const std::vector<long long>& samples);

}  // namespace sluice::cli
