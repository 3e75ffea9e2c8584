// Percentiles of a set of latencies.
#pragma once

#include <cstddef>
#include <vector>

namespace bench {

struct LatencySummary {
  std::size_t samples = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// Nearest-rank percentiles of `latencies_ms`; all zero for an empty set.
LatencySummary summarize_latencies(std::vector<double> latencies_ms);

}  // namespace bench
