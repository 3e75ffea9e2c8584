// What the side-by-side cases (peer_cases.cpp, bullmq_cases.cpp) share: the sluice side of the
// workload, and how a row of the table sets sluice against a peer.
#pragma once

#include <string>

#include "result.hpp"
#include "sluice/options.hpp"

namespace bench {

// One side's throughput in a round.
struct SideFigures {
  double enqueue_per_s = 0;
  double process_per_s = 0;
  // Processing by plain wall time, for the reader to weigh the run-queue correction.
  double process_wall_per_s = 0;

  // Keeps the better of each figure (a side's best round).
  void keep_best(const SideFigures& round);
};

// The sluice side: enqueues `jobs` of workload.hpp's payloads in one transaction into a new file
// at `path` with `synchronous`, then drains them with one worker whose handler inserts a domain
// row in the delivery transaction. Times are unstolen seconds (stopwatch.hpp). Throws
// std::runtime_error if not every job was delivered and written. Not thread-safe.
SideFigures sluice_side(const std::string& path, sluice::Synchronous synchronous, long long jobs);

// The bytes of the first `jobs` payloads as workload.hpp's sample_payloads() writes them: what a
// peer must have stored or handed its handler, to show it did the same work.
long long payload_bytes(long long jobs);

// A row of sluice's rate against the peer's (the floor column), ratio sluice / peer.
Result peer_row(const std::string& name, long long jobs, double sluice, double peer);

}  // namespace bench
