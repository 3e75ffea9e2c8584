#include "sluice/retry_policy.hpp"

#include <algorithm>
#include <cmath>

#include "sluice/error.hpp"

namespace sluice {
namespace {

// SplitMix64: a stateless hash, so a delay depends only on (seed, event group, attempt).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double base_delay_ms(const RetryPolicy& policy, int failed_attempt) {
  const double grown = static_cast<double>(policy.initial_backoff.count()) *
                       std::pow(policy.multiplier, std::max(0, failed_attempt - 1));
  return std::min(grown, static_cast<double>(policy.max_backoff.count()));
}

// `ms` rounded to a Duration, Duration::max() when it is past what one can hold: converting an
// out-of-range double to an integer is undefined, and a huge max_backoff times the jitter, or the
// sum of many of them, goes past it.
Duration saturating_ms(double ms) {
  // 2^63, exactly representable; Duration::max() as a double rounds up to it.
  constexpr double kPastLargest = 9223372036854775808.0;
  if (!(ms < kPastLargest)) return Duration::max();
  return Duration(static_cast<Duration::rep>(std::round(ms)));
}

}  // namespace

Duration RetryPolicy::backoff(int failed_attempt, std::int64_t event_seq) const {
  const std::uint64_t h =
      mix(seed ^ mix(static_cast<std::uint64_t>(event_seq / kJitterGroup) ^ mix(failed_attempt)));
  const double unit = static_cast<double>(h >> 11) / static_cast<double>(1ULL << 53);  // [0, 1)
  const double factor = 1.0 + jitter * (2.0 * unit - 1.0);
  return saturating_ms(base_delay_ms(*this, failed_attempt) * factor);
}

Duration RetryPolicy::longest_span() const {
  double total = 0;
  for (int attempt = 1; attempt < max_attempts; ++attempt) {
    const double delay = base_delay_ms(*this, attempt);
    if (delay >= static_cast<double>(max_backoff.count())) {
      // Every later delay is the cap too: max_attempts may be in the billions.
      total += delay * (1.0 + jitter) * (max_attempts - attempt);
      break;
    }
    total += delay * (1.0 + jitter);
  }
  return saturating_ms(std::ceil(total));
}

void RetryPolicy::validate() const {
  if (max_attempts < 1) throw InvalidArgument("sluice: RetryPolicy.max_attempts must be >= 1");
  if (initial_backoff.count() < 0) {
    throw InvalidArgument("sluice: RetryPolicy.initial_backoff must not be negative");
  }
  if (!(multiplier >= 1.0 && std::isfinite(multiplier))) {
    throw InvalidArgument("sluice: RetryPolicy.multiplier must be finite and >= 1");
  }
  if (max_backoff < initial_backoff) {
    throw InvalidArgument("sluice: RetryPolicy.max_backoff must be >= initial_backoff");
  }
  if (!(jitter >= 0.0 && jitter < 1.0)) {
    throw InvalidArgument("sluice: RetryPolicy.jitter must be in [0, 1)");
  }
}

}  // namespace sluice
