// Time as sluice sees it. Every backoff, delay, lease and retention reads an injectable Clock,
// so tests drive time by hand with ManualClock.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

namespace sluice {

// Milliseconds since the Unix epoch, the precision sluice stores.
using TimePoint = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;
using Duration = std::chrono::milliseconds;

// Source of the current time. Implementations must be thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

// Thread-safe. Wall-clock time (std::chrono::system_clock).
class SystemClock final : public Clock {
 public:
  TimePoint now() const override;
};

// Thread-safe. A clock that moves only when told to; for tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::hours(24 * 365 * 56)))
      : now_ms_(start.time_since_epoch().count()) {}
  TimePoint now() const override { return TimePoint(Duration(now_ms_.load())); }
  void set(TimePoint t) { now_ms_.store(t.time_since_epoch().count()); }
  void advance(Duration d) { now_ms_.fetch_add(d.count()); }

 private:
  std::atomic<long long> now_ms_;
};

// The process-wide system clock, used when Options::clock is null.
std::shared_ptr<Clock> system_clock();

}  // namespace sluice
