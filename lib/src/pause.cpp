#include "sluice/pause.hpp"

#include <SQLiteCpp/Statement.h>

#include <nlohmann/json.hpp>

#include "audit_trail.hpp"
#include "commit_signal.hpp"
#include "connection_clock.hpp"
#include "consumer_registry.hpp"
#include "control_characters.hpp"
#include "log_to.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// Workers of this process asleep on the commit signal wake for the change at once; those of
// other processes see it through the file watch or their next poll.
void wake_workers(SQLite::Database& db) {
  if (CommitSignal* signal = CommitSignal::of(db)) signal->raise();
}

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void pause_consumer(SQLite::Database& db, const std::string& name, const PauseOptions& pause,
                    const Options& options) {
  AuditEntry audit;
  pause_consumer(db, name, pause, options, audit);
}

void pause_consumer(SQLite::Database& db, const std::string& name, const PauseOptions& pause,
                    const Options& options, AuditEntry& audit) {
  audit.action = "pause";
  if (audit.note.empty()) audit.note = pause.note;
  nlohmann::json record{{"consumer", name}};
  if (pause.until) record["until"] = format_rfc3339(*pause.until);
  AuditTrail trail(audit, json_text(record));
  if (has_control_character(pause.note)) {
    throw InvalidArgument("sluice: pause consumer: the note has a control character");
  }
  guarded("pause consumer", [&] {
    const TimePoint now = clock_for(db, options)->now();
    if (pause.until && *pause.until <= now) {
      throw InvalidArgument("sluice: pause consumer: the pause would end at " +
                            format_rfc3339(*pause.until) + ", not after now (" +
                            format_rfc3339(now) + ")");
    }
    WriteTransaction tx(db);
    const std::int64_t id = consumer_id(db, name);
    // A pause already in force keeps its start: "paused since" is when the consumer stopped.
    SQLite::Statement update(
        db,
        "UPDATE sluice_consumers SET paused_at = CASE WHEN paused_at IS NOT NULL AND "
        "(paused_until IS NULL OR paused_until > ?2) THEN paused_at ELSE ?2 END, "
        "paused_until = ?3, pause_note = ?4, paused_by = 'operator' WHERE id = ?1");
    update.bind(1, static_cast<int64_t>(id));
    update.bind(2, static_cast<int64_t>(to_millis(now)));
    if (pause.until) {
      update.bind(3, static_cast<int64_t>(to_millis(*pause.until)));
    } else {
      update.bind(3);
    }
    if (pause.note.empty()) {
      update.bind(4);
    } else {
      update.bind(4, pause.note);
    }
    update.exec();
    trail.record(db, 1, now);
    tx.commit();
    trail.committed();
    wake_workers(db);
    log_to(options, LogLevel::kInfo, "consumer paused",
           {{"consumer", name},
            {"until", pause.until ? format_rfc3339(*pause.until) : std::string("resumed")},
            {"note", pause.note},
            {"source", audit.source}});
  });
}

bool resume_consumer(SQLite::Database& db, const std::string& name, const Options& options) {
  AuditEntry audit;
  return resume_consumer(db, name, options, audit);
}

bool resume_consumer(SQLite::Database& db, const std::string& name, const Options& options,
                     AuditEntry& audit) {
  audit.action = "resume";
  AuditTrail trail(audit, json_text(nlohmann::json{{"consumer", name}}));
  return guarded("resume consumer", [&] {
    const TimePoint now = clock_for(db, options)->now();
    WriteTransaction tx(db);
    const std::int64_t id = consumer_id(db, name);
    SQLite::Statement state(db,
                            "SELECT paused_at IS NOT NULL AND (paused_until IS NULL OR "
                            "paused_until > ?2) FROM sluice_consumers WHERE id = ?1");
    state.bind(1, static_cast<int64_t>(id));
    state.bind(2, static_cast<int64_t>(to_millis(now)));
    state.executeStep();
    const bool was_paused = state.getColumn(0).getInt() != 0;
    state.reset();
    // Cleared, a pause that ran out too, not ended at now: a clock set back later would find
    // either in force again.
    SQLite::Statement clear(db,
                            "UPDATE sluice_consumers SET paused_at = NULL, paused_until = NULL, "
                            "pause_note = NULL, paused_by = NULL WHERE id = ?1");
    clear.bind(1, static_cast<int64_t>(id));
    clear.exec();
    trail.record(db, was_paused ? 1 : 0, now);
    tx.commit();
    trail.committed();
    wake_workers(db);
    log_to(
        options, LogLevel::kInfo, "consumer resumed",
        {{"consumer", name}, {"was_paused", was_paused ? "yes" : "no"}, {"source", audit.source}});
    return was_paused;
  });
}

}  // namespace sluice
