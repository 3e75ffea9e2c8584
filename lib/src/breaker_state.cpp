#include "breaker_state.hpp"

#include <SQLiteCpp/Statement.h>

#include <algorithm>

#include "log_to.hpp"
#include "saturating_time.hpp"
#include "sluice/error.hpp"
#include "time_format.hpp"

namespace sluice {

void Breaker::validate() const {
  if (failures < 1) throw InvalidArgument("sluice: Breaker.failures must be >= 1");
  if (cool_down.count() <= 0) throw InvalidArgument("sluice: Breaker.cool_down must be > 0");
  if (max_cool_down < cool_down) {
    throw InvalidArgument("sluice: Breaker.max_cool_down must be >= cool_down");
  }
  if (max_cool_down > Options::kLongestDuration) {
    throw InvalidArgument("sluice: Breaker.max_cool_down must be at most 100 years");
  }
}

const char* BreakerState::name(TimePoint now) const {
  if (!open_until) return "closed";
  return probe || *open_until <= now ? "half-open" : "open";
}

BreakerState read_breaker_state(SQLite::Database& db, std::int64_t id) {
  SQLite::Statement row(db,
                        "SELECT breaker_consecutive, breaker_open_until, "
                        "coalesce(breaker_open_ms, 0), breaker_probe FROM sluice_consumers "
                        "WHERE id = ?");
  row.bind(1, static_cast<int64_t>(id));
  BreakerState state;
  if (!row.executeStep()) return state;
  state.consecutive = row.getColumn(0).getInt64();
  if (!row.isColumnNull(1)) state.open_until = TimePoint(Duration(row.getColumn(1).getInt64()));
  state.open_for = Duration(row.getColumn(2).getInt64());
  state.probe = row.getColumn(3).getInt() != 0;
  return state;
}

bool BreakerTally::opens(const Breaker& breaker) const {
  if (trailing_failures == 0) return false;
  if (probe) return true;
  // Opened already (by another worker): failures here only add to the count.
  if (before && before->open_until) return false;
  const long long consecutive = trailing_failures + (success || !before ? 0 : before->consecutive);
  return consecutive >= breaker.failures;
}

void write_breaker_state(SQLite::Database& db, std::int64_t id, const std::string& name,
                         const Breaker& breaker, const BreakerTally& tally, TimePoint now,
                         const Options& options) {
  const BreakerState before = tally.before.value_or(BreakerState{});
  BreakerState after = before;
  after.consecutive = tally.trailing_failures + (tally.success ? 0 : before.consecutive);
  const char* transition = nullptr;
  if (tally.probe && tally.trailing_failures == 0 && tally.success) {
    after = BreakerState{};
    transition = "breaker closed: the probe succeeded";
  } else if (tally.opens(breaker)) {
    // A failed probe doubles the cool-down in force, up to the cap; a first opening starts it.
    after.open_for =
        tally.probe ? std::min(before.open_for * 2, breaker.max_cool_down) : breaker.cool_down;
    after.open_for = std::max(after.open_for, breaker.cool_down);
    after.open_until = add_saturating(now, after.open_for);
    after.probe = false;
    transition = tally.probe ? "breaker opened again: the probe failed"
                             : "breaker opened: consecutive failures";
  }
  SQLite::Statement update(db,
                           "UPDATE sluice_consumers SET breaker_consecutive = ?2, "
                           "breaker_open_until = ?3, breaker_open_ms = ?4, breaker_probe = ?5 "
                           "WHERE id = ?1");
  update.bind(1, static_cast<int64_t>(id));
  update.bind(2, static_cast<int64_t>(after.consecutive));
  if (after.open_until) {
    update.bind(3, static_cast<int64_t>(to_millis(*after.open_until)));
    update.bind(4, static_cast<int64_t>(after.open_for.count()));
  } else {
    update.bind(3);
    update.bind(4);
  }
  update.bind(5, after.probe ? 1 : 0);
  update.exec();
  if (transition != nullptr) {
    log_to(options, after.open_until ? LogLevel::kWarn : LogLevel::kInfo, transition,
           {{"consumer", name},
            {"consecutive_failures", after.consecutive},
            {"until", after.open_until ? format_rfc3339(*after.open_until) : std::string()},
            {"cool_down_ms", after.open_for.count()}});
  }
}

void claim_breaker_probe(SQLite::Database& db, std::int64_t id, const std::string& name,
                         TimePoint now, const Options& options) {
  SQLite::Statement update(db,
                           "UPDATE sluice_consumers SET breaker_probe = 1, breaker_open_until = "
                           "?2 + breaker_open_ms WHERE id = ?1");
  update.bind(1, static_cast<int64_t>(id));
  update.bind(2, static_cast<int64_t>(to_millis(now)));
  update.exec();
  log_to(options, LogLevel::kInfo, "breaker half-open: one event goes through as the probe",
         {{"consumer", name}});
}

}  // namespace sluice
