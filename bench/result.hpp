// One row of the benchmark's output, and the table and JSON it is printed as.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "latency_summary.hpp"

namespace bench {

struct Result {
  std::string name;
  long long events = 0;
  // Throughput of the case; absent for latency-only cases.
  std::optional<double> events_per_s;
  // What the case is compared with: the floor, or for scale and retry cases the same workload
  // in its small or failure-free form.
  std::optional<double> floor_events_per_s;
  std::optional<double> ratio;
  std::optional<LatencySummary> latency;
  std::optional<double> rss_growth_mib;
  std::optional<double> peak_rss_mib;
  // The target in words ("ratio >= 0.60"), empty if the case has none.
  std::string target;
  // Whether the target was met; absent without a target or in a quick run.
  std::optional<bool> met;
  // Further measured figures by name (e.g. "cpu_ms_per_s"), in the note of the table and as
  // an object in the JSON.
  std::vector<std::pair<std::string, double>> figures;
  // Anything else the reader needs, e.g. why a case stopped early.
  std::string note;
};

void print_table(std::ostream& out, const std::vector<Result>& results);
void print_json(std::ostream& out, const std::vector<Result>& results);

}  // namespace bench
