#include "sparkline.hpp"

#include <algorithm>
#include <array>

namespace sluice::cli {

std::string sparkline(const std::vector<long long>& samples) {
  static constexpr std::array<const char*, 8> kBlocks{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  long long largest = 0;
  for (long long sample : samples) largest = std::max(largest, sample);
  std::string line;
  for (long long sample : samples) {
    std::size_t level = 0;
    if (largest > 0 && sample > 0) {
      // Any non-zero sample shows above the floor, so a backlog of 1 among 1000s is visible.
      level = std::max<std::size_t>(1, static_cast<std::size_t>(sample * 7 / largest));
    }
    line += kBlocks[level];
  }
  return line;
}

}  // namespace sluice::cli
