// Summaries of measured samples: percentiles of latencies, medians of rates.
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

// The middle value (the mean of the two middle ones for an even count). Throws for no values.
double median(std::vector<double> values);

}  // namespace bench
