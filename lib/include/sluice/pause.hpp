// Pausing a consumer: no worker of any process claims its events until it is resumed or the pause
// runs out. The pause is kept in the file, so it holds across processes and restarts. Its end is
// an absolute time, as an event's not-before time is: should the clock be set back before the end
// of a pause that ran out, the pause is in force again until then.
#pragma once

#include <SQLiteCpp/Database.h>

#include <optional>
#include <string>

#include "sluice/audit.hpp"
#include "sluice/clock.hpp"
#include "sluice/options.hpp"

namespace sluice {

struct PauseOptions {
  // When the pause ends by itself (no resume needed); unset: it lasts until resume_consumer.
  std::optional<TimePoint> until;
  // Why, shown by stats, the CLI and the console and recorded in the audit log; empty when none.
  std::string note;
};

// Pauses consumer `name` in one write transaction that also records it in the audit log. Its
// workers, in every process, claim nothing more once they see the commit (a started worker wakes
// for it); events they claimed but have not handed to a handler go back to pending with no attempt
// spent; handler calls already running finish and their outcomes commit. Nothing is retried or
// dead-lettered while paused. Pausing a paused consumer replaces its end and note and keeps when it
// began; it also takes over from a handler's throttle. Throws NotFound for an
// unknown consumer, InvalidArgument for an `until` not after the connection clock's now or a note
// with control characters (nothing written).
void pause_consumer(SQLite::Database& db, const std::string& name, const PauseOptions& pause = {},
                    const Options& options = {});
// As above, recording itself in `audit` (its action is set to "pause", its count to 1). The
// overload without it records an entry of its own from source "api".
void pause_consumer(SQLite::Database& db, const std::string& name, const PauseOptions& pause,
                    const Options& options, AuditEntry& audit);

// Ends a pause of consumer `name`, whoever made it (an operator or a handler's throttle),
// in one write transaction that also records it in the audit log: its started workers wake and
// claim again. Returns whether it was paused; resuming one that is not is no error (recorded with
// count 0), and clears a pause that ran out (which a clock set back would bring back). Throws
// NotFound for an unknown consumer.
bool resume_consumer(SQLite::Database& db, const std::string& name, const Options& options = {});
// As above, recording itself in `audit` (action "resume", count 1 if it was paused, else 0).
bool resume_consumer(SQLite::Database& db, const std::string& name, const Options& options,
                     AuditEntry& audit);

}  // namespace sluice
