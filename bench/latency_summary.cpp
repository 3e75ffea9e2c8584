#include "latency_summary.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace bench {
namespace {

double nearest_rank(const std::vector<double>& sorted, double percentile) {
  auto rank = static_cast<std::size_t>(std::ceil(percentile / 100.0 * sorted.size()));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

LatencySummary summarize_latencies(std::vector<double> latencies_ms) {
  LatencySummary summary;
  if (latencies_ms.empty()) return summary;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  summary.samples = latencies_ms.size();
  summary.p50_ms = nearest_rank(latencies_ms, 50);
  summary.p99_ms = nearest_rank(latencies_ms, 99);
  summary.max_ms = latencies_ms.back();
  return summary;
}

double median(std::vector<double> values) {
  if (values.empty()) throw std::runtime_error("bench: no samples to take the median of");
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace bench
