// A delay that doubles while the broker keeps failing and falls back once it answers.
#pragma once

#include <algorithm>
#include <optional>

#include "sluice/clock.hpp"

namespace sluice::nats {

// The delay grows once per retry period, not once per failure: a relay with a backlog fails
// batch after batch within milliseconds of an outage, and doubling at each of them took the
// delay from its minimum to its maximum (200 ms to 30 s) in about ten milliseconds, so a 3 s
// outage held events back for 30 s. Every failure within a period waits for the period's end,
// so the events of all those batches are tried again together.
// Not thread-safe.
class Backoff {
 public:
  Backoff(Duration min, Duration max) : min_(min), max_(std::max(min, max)), period_(min) {}

  // How long from `now` to wait before trying again: until the end of the current period, or,
  // once that is over, of a new period twice as long as the last, up to the maximum. A clock set
  // back never makes the wait longer than the period.
  Duration failed(TimePoint now) {
    if (!period_end_) {
      period_ = min_;
      period_end_ = now + period_;
    } else if (now >= *period_end_) {
      period_ = std::min(max_, period_ * 2);
      period_end_ = now + period_;
    }
    return std::min(period_, *period_end_ - now);
  }

  // The broker answered (or is back): the next failure starts again from the minimum.
  void succeeded() { period_end_.reset(); }

 private:
  Duration min_;
  Duration max_;
  Duration period_;
  // Unset while the broker answers.
  std::optional<TimePoint> period_end_;
};

}  // namespace sluice::nats
