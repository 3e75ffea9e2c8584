#include "settable_clock.hpp"

namespace sluice::sqlext {

TimePoint SettableClock::now() const {
  const long long manual = manual_ms_.load();
  return manual == kSystem ? system_clock()->now() : TimePoint(Duration(manual));
}

void SettableClock::set(std::optional<TimePoint> time) {
  manual_ms_.store(time ? static_cast<long long>(time->time_since_epoch().count()) : kSystem);
}

}  // namespace sluice::sqlext
