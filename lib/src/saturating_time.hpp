// Time arithmetic that cannot overflow: a delay, lease or backoff of Duration::max() means
// "as late as can be stored", never a time in the past (signed overflow is also undefined).
#pragma once

#include <limits>

#include "sluice/clock.hpp"

namespace sluice {

// t + d, clamped to [TimePoint::min(), TimePoint::max()].
inline TimePoint add_saturating(TimePoint t, Duration d) {
  using Rep = Duration::rep;
  const Rep a = t.time_since_epoch().count();
  const Rep b = d.count();
  Rep sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    sum = b > 0 ? std::numeric_limits<Rep>::max() : std::numeric_limits<Rep>::min();
  }
  return TimePoint(Duration(sum));
}

}  // namespace sluice
