#include "connection_clock.hpp"

#include "connection_cache.hpp"

namespace sluice {
namespace {

struct RecordedClock : ConnectionCached {
  std::shared_ptr<Clock> clock;
};

// The key of the recorded clock among a connection's cached objects.
const char kClockKey = 0;

}  // namespace

void remember_clock(SQLite::Database& db, std::shared_ptr<Clock> clock) {
  auto* recorded = static_cast<RecordedClock*>(find_connection_cached(db, &kClockKey));
  if (recorded == nullptr && clock == nullptr) return;
  if (recorded == nullptr) {
    recorded = &static_cast<RecordedClock&>(
        connection_cached(db, &kClockKey, [] { return std::make_unique<RecordedClock>(); }));
  }
  recorded->clock = std::move(clock);
}

std::shared_ptr<Clock> clock_for(SQLite::Database& db, const Options& options) {
  if (options.clock) return options.clock;
  const auto* recorded = static_cast<const RecordedClock*>(find_connection_cached(db, &kClockKey));
  return recorded != nullptr && recorded->clock ? recorded->clock : system_clock();
}

}  // namespace sluice
