// The clock of a connection that loaded the extension: the system's until a test sets it with
// sluice_clock_set(), then a manual one that moves only when told, so that a Python or Node test
// plays out retries and delays without waiting for them (docs/sql.md, "Testing your handlers").
#pragma once

#include <atomic>
#include <climits>
#include <optional>

#include "sluice/clock.hpp"

namespace sluice::sqlext {

// Thread-safe: the engine may read a clock from any thread.
class SettableClock final : public Clock {
 public:
  // The manual time if one is set, else the system's.
  TimePoint now() const override;

  // Stops the clock at `time`, or with nullopt gives it back to the system's time.
  void set(std::optional<TimePoint> time);

  // Whether the clock was set (and not given back since).
  bool manual() const { return manual_ms_.load() != kSystem; }

 private:
  // No manual time; sluice_clock_set() refuses a time before the epoch, so it never sets this.
  static constexpr long long kSystem = LLONG_MIN;
  std::atomic<long long> manual_ms_{kSystem};
};

}  // namespace sluice::sqlext
