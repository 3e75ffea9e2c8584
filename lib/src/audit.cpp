#include "sluice/audit.hpp"

#include <SQLiteCpp/Statement.h>

#include <optional>

#include "audit_trail.hpp"
#include "connection_clock.hpp"
#include "json_syntax.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

bool one_of(const std::string& value, std::initializer_list<const char*> allowed) {
  for (const char* a : allowed) {
    if (value == a) return true;
  }
  return false;
}

std::int64_t insert_audit(SQLite::Database& db, const AuditEntry& entry, TimePoint at) {
  SQLite::Statement insert(db,
                           "INSERT INTO sluice_audit (at, action, filter, count, note, source) "
                           "VALUES (?, ?, ?, ?, ?, ?)");
  insert.bind(1, static_cast<int64_t>(to_millis(at)));
  insert.bind(2, entry.action);
  insert.bind(3, entry.filter);
  insert.bind(4, static_cast<int64_t>(entry.count));
  if (entry.note.empty()) {
    insert.bind(5);
  } else {
    insert.bind(5, entry.note);
  }
  insert.bind(6, entry.source);
  insert.exec();
  return db.getLastInsertRowid();
}

}  // namespace

void validate_audit_entry(const AuditEntry& entry) {
  if (!one_of(entry.action,
              {"replay", "discard", "backfill", "prune", "remove", "pause", "resume"})) {
    throw InvalidArgument("sluice: record audit: unknown action '" + entry.action +
                          "' (replay, discard, backfill, prune, remove, pause, resume)");
  }
  if (!one_of(entry.source, {"cli", "console", "sql", "api"})) {
    throw InvalidArgument("sluice: record audit: unknown source '" + entry.source +
                          "' (cli, console, sql, api)");
  }
  const std::size_t start = entry.filter.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || entry.filter[start] != '{' || !is_valid_json(entry.filter)) {
    throw InvalidArgument("sluice: record audit: the filter must be a JSON object");
  }
}

AuditTrail::AuditTrail(AuditEntry& entry, const std::string& filter) : entry_(entry) {
  if (entry_.id == 0 && entry_.filter == "{}") entry_.filter = filter;
  validate_audit_entry(entry_);
}

void AuditTrail::record(SQLite::Database& db, long long changed, TimePoint now) {
  // An earlier transaction that wrote the entry but did not commit wrote nothing.
  written_id_ = entry_.id;
  written_count_ = entry_.count + changed;
  if (entry_.id == 0) {
    AuditEntry entry = entry_;
    entry.count = written_count_;
    written_id_ = insert_audit(db, entry, now);
    return;
  }
  SQLite::Statement update(db, "UPDATE sluice_audit SET count = ?, at = ? WHERE id = ?");
  update.bind(1, static_cast<int64_t>(written_count_));
  update.bind(2, static_cast<int64_t>(to_millis(now)));
  update.bind(3, static_cast<int64_t>(entry_.id));
  update.exec();
}

void AuditTrail::committed() {
  entry_.id = written_id_;
  entry_.count = written_count_;
}

void AuditTrail::finish(SQLite::Database& db, TimePoint now) {
  if (entry_.id != 0) return;
  WriteTransaction tx(db);
  record(db, 0, now);
  tx.commit();
  committed();
}

std::int64_t record_audit(SQLite::Database& db, const AuditEntry& entry, const Options& options) {
  validate_audit_entry(entry);
  return guarded("record audit", [&] {
    const TimePoint now = clock_for(db, options)->now();
    // In the caller's transaction when there is one, so the record commits with its action.
    std::optional<WriteTransaction> tx;
    if (!in_transaction(db)) tx.emplace(db);
    const std::int64_t id = insert_audit(db, entry, now);
    if (tx) tx->commit();
    return id;
  });
}

std::vector<AuditEntry> list_audit(SQLite::Database& db, std::int64_t after_id, int limit) {
  if (limit < 1) throw InvalidArgument("sluice: list audit: the limit must be >= 1");
  return guarded("list audit", [&] {
    SQLite::Statement select(db,
                             "SELECT id, at, action, filter, count, coalesce(note, ''), source "
                             "FROM sluice_audit WHERE id > ? ORDER BY id LIMIT ?");
    select.bind(1, static_cast<int64_t>(after_id));
    select.bind(2, limit);
    std::vector<AuditEntry> entries;
    while (select.executeStep()) {
      AuditEntry e;
      e.id = select.getColumn(0).getInt64();
      e.at = TimePoint(Duration(select.getColumn(1).getInt64()));
      e.action = select.getColumn(2).getString();
      e.filter = select.getColumn(3).getString();
      e.count = select.getColumn(4).getInt64();
      e.note = select.getColumn(5).getString();
      e.source = select.getColumn(6).getString();
      entries.push_back(std::move(e));
    }
    return entries;
  });
}

}  // namespace sluice
