#include "file_state.hpp"

#include <SQLiteCpp/Statement.h>

#include <sluice/sluice.hpp>

#include "applied_check.hpp"

namespace sluice::torture {

long long claims_left(SQLite::Database& db) {
  return db.execAndGet("SELECT count(*) FROM sluice_claims").getInt64();
}

long long delivered_without_effect(SQLite::Database& db, const std::string& consumer) {
  db.exec(kAppliedTableSql);
  SQLite::Statement applied(db,
                            "SELECT count(*) FROM torture_applied WHERE consumer = ? AND "
                            "event_id = ?");
  EventFilter filter;
  filter.consumer = consumer;
  filter.state = "delivered";
  filter.limit = 500;
  long long missing = 0;
  for (;;) {
    const std::vector<Event> page = list_events(db, filter);
    for (const Event& e : page) {
      applied.bind(1, consumer);
      applied.bind(2, e.id);
      applied.executeStep();
      if (applied.getColumn(0).getInt64() == 0) ++missing;
      applied.reset();
    }
    if (page.size() < static_cast<std::size_t>(filter.limit)) return missing;
    filter.after_seq = page.back().seq;
  }
}

bool event_stored(SQLite::Database& db, const std::string& event_id) {
  try {
    find_event(db, event_id);
    return true;
  } catch (const NotFound&) {
    return false;
  }
}

std::set<std::string> dead_letter_ids(SQLite::Database& db) {
  std::set<std::string> ids;
  for (const DeadLetter& letter : list_dead_letters(db, {})) ids.insert(letter.event_id);
  return ids;
}

}  // namespace sluice::torture
