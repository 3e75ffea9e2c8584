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

// t - d, clamped to [TimePoint::min(), TimePoint::max()]: a cutoff `d` before now.
inline TimePoint sub_saturating(TimePoint t, Duration d) {
  using Rep = Duration::rep;
  Rep difference = 0;
  if (__builtin_sub_overflow(t.time_since_epoch().count(), d.count(), &difference)) {
    difference =
        d > Duration(0) ? std::numeric_limits<Rep>::min() : std::numeric_limits<Rep>::max();
  }
  return TimePoint(Duration(difference));
}

// later - earlier, clamped to [Duration::min(), Duration::max()]: how long ago `earlier` was
// (a lag, a sleep until a due time) even when the two are at opposite ends of time.
inline Duration sub_saturating(TimePoint later, TimePoint earlier) {
  using Rep = Duration::rep;
  const Rep a = later.time_since_epoch().count();
  const Rep b = earlier.time_since_epoch().count();
  Rep difference = 0;
  if (__builtin_sub_overflow(a, b, &difference)) {
    difference = a > b ? std::numeric_limits<Rep>::max() : std::numeric_limits<Rep>::min();
  }
  return Duration(difference);
}

}  // namespace sluice
