#include "applied_check.hpp"

#include <SQLiteCpp/Statement.h>

#include <map>
#include <set>
#include <unordered_set>

namespace sluice::torture {

AppliedCheck check_applied(SQLite::Database& db, const std::vector<std::string>& acked,
                           const std::vector<std::string>& intended,
                           const std::vector<std::string>& consumers,
                           const std::vector<std::string>& ordered) {
  AppliedCheck check;
  db.exec(kAppliedTableSql);
  const std::unordered_set<std::string> acked_set(acked.begin(), acked.end());
  const std::unordered_set<std::string> intended_set(intended.begin(), intended.end());
  check.events = static_cast<long long>(acked_set.size());

  std::map<std::string, std::map<std::string, long long>> applied;   // consumer -> id -> rows
  std::map<std::string, std::map<std::string, long long>> last_seq;  // consumer -> key -> seq
  const std::set<std::string> ordered_set(ordered.begin(), ordered.end());
  SQLite::Statement rows(db, "SELECT consumer, event_id, seq, key FROM torture_applied ORDER BY n");
  while (rows.executeStep()) {
    const std::string consumer = rows.getColumn(0).getString();
    const std::string id = rows.getColumn(1).getString();
    const long long seq = rows.getColumn(2).getInt64();
    const std::string key = rows.getColumn(3).getString();
    if (++applied[consumer][id] > 1) ++check.double_applied;
    if (intended_set.count(id) == 0 && acked_set.count(id) == 0) ++check.unexpected;
    if (ordered_set.count(consumer) != 0 && !key.empty()) {
      auto [it, fresh] = last_seq[consumer].try_emplace(key, seq);
      if (!fresh) {
        if (seq < it->second) ++check.inversions;
        it->second = std::max(it->second, seq);
      }
    }
  }
  for (const std::string& consumer : consumers) {
    const auto& seen = applied[consumer];
    for (const std::string& id : acked_set) {
      if (seen.count(id) == 0) ++check.lost;
    }
  }
  check.integrity = db.execAndGet("PRAGMA integrity_check").getString();
  return check;
}

}  // namespace sluice::torture
