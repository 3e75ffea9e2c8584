// How a consumer retries a failing event: data, not code paths.
#pragma once

#include <cstdint>

#include "sluice/clock.hpp"

namespace sluice {

// Exponential backoff with jitter and a cap. Thread-safe: a plain value.
// The delay after failed attempt n (1-based) is
//   min(max_backoff, initial_backoff * multiplier^(n-1)) * (1 + jitter * u),  u in [-1, 1),
// where u is derived from (seed, event_seq / kJitterGroup, n), so a schedule is reproducible for
// a given seed. Events enqueued close together share their jitter: their retries fall due
// together, as the batch a worker claims them in, and their entries in the due index sit side by
// side (jittered one by one, each failure of a batch dirtied an index page of its own: a 10%
// failure rate wrote 60% more to the WAL than no failures).
struct RetryPolicy {
  // Events whose seqs agree but for their last bits share a jitter factor.
  static constexpr std::int64_t kJitterGroup = 256;
  // Attempts in all, the first included; after the last failed one the event is dead-lettered
  // with reason "exhausted". Must be >= 1.
  int max_attempts = 5;
  // Delay after the first failed attempt.
  Duration initial_backoff = std::chrono::seconds(1);
  // Growth of the delay per further failed attempt. Must be finite and >= 1.
  double multiplier = 2.0;
  // Upper bound of any single delay, before jitter.
  Duration max_backoff = std::chrono::minutes(10);
  // Fraction of the delay randomised either way, in [0, 1).
  double jitter = 0.2;
  // Seeds the jitter; equal seeds give equal schedules.
  std::uint64_t seed = 0x5111ce;

  // The delay before the next attempt after attempt `failed_attempt` of event `event_seq` failed;
  // Duration::max() if it is longer than a Duration holds.
  Duration backoff(int failed_attempt, std::int64_t event_seq) const;

  // The longest time from the first attempt to the last retry: the sum of every delay at full
  // jitter, Duration::max() if longer than that. Retention shorter than this could forget a dedup
  // key while retries still run.
  Duration longest_span() const;

  // Throws InvalidArgument naming the field that is out of range.
  void validate() const;
};

}  // namespace sluice
