// A delay that doubles while the broker keeps failing and falls back once it answers.
#pragma once

#include <algorithm>

#include "sluice/clock.hpp"

namespace sluice::nats {

// Not thread-safe.
class Backoff {
 public:
  Backoff(Duration min, Duration max) : min_(min), max_(std::max(min, max)), next_(min) {}

  // The delay to wait now; the one after it is twice as long, up to the maximum.
  Duration failed() {
    Duration delay = next_;
    next_ = std::min(max_, next_ * 2);
    return delay;
  }
  void succeeded() { next_ = min_; }

 private:
  Duration min_;
  Duration max_;
  Duration next_;
};

}  // namespace sluice::nats
