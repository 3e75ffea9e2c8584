#include "sluice/database.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdint>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "commit_signal.hpp"
#include "connection_clock.hpp"
#include "schema.hpp"
#include "sqlite_error.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// SQLite's default busy handler sleeps 1, 2, 5, 10... ms between tries, so a waiting writer keeps
// missing the short gaps a worker leaves between its transactions (see worker.cpp). This one
// polls every 50 us for the first millisecond, then every 250 us until the timeout: a few
// thousand cheap lock attempts a second while it waits.
long long busy_wait_us(int tries) { return tries < 20 ? 50 : 250; }

long long busy_waited_us(int tries) {
  if (tries <= 20) return tries * 50LL;
  return 1000 + (tries - 20) * 250LL;
}

// What a connection's busy handler needs: its timeout and its file's signal (nullptr in memory).
struct BusyTarget {
  long long timeout_ms;
  CommitSignal* signal;
};

// One target per (signal, timeout), alive for the process: few distinct values exist.
const BusyTarget* busy_target(CommitSignal* signal, long long timeout_ms) {
  static std::mutex mutex;
  static auto* targets =
      new std::map<std::pair<CommitSignal*, long long>, std::unique_ptr<BusyTarget>>;
  std::lock_guard lock(mutex);
  auto& slot = (*targets)[{signal, timeout_ms}];
  if (!slot) slot = std::make_unique<BusyTarget>(BusyTarget{timeout_ms, signal});
  return slot.get();
}

int busy_handler(void* target, int tries) {
  const auto* busy = static_cast<const BusyTarget*>(target);
  if (busy_waited_us(tries) >= busy->timeout_ms * 1000) return 0;
  if (busy->signal != nullptr) busy->signal->note_writer_waiting();
  struct timespec ts {
    0, static_cast<long>(busy_wait_us(tries) * 1000)
  };
  nanosleep(&ts, nullptr);
  return 1;
}

bool has_table(SQLite::Database& db, const char* name) {
  SQLite::Statement query(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  query.bind(1, name);
  return query.executeStep();
}

// Throws CorruptDatabaseError for a stored value that is no schema version: a negative one was
// taken for an older schema and indexed the migrations below their start, one past int's range
// was read cut to its low bits.
int read_version(SQLite::Database& db) {
  if (!has_table(db, "sluice_meta")) return 0;
  SQLite::Statement query(db, "SELECT value FROM sluice_meta WHERE name = 'schema_version'");
  if (!query.executeStep()) return 0;
  const SQLite::Column value = query.getColumn(0);
  if (value.getType() != SQLITE_INTEGER || value.getInt64() < 1 ||
      value.getInt64() > std::numeric_limits<int>::max()) {
    throw CorruptDatabaseError(
        "sluice: read schema version: sluice_meta holds schema_version '" + value.getString() +
            "', which is no sluice schema version (1 to " +
            std::to_string(schema::current_version()) + "): the file is damaged",
        SQLITE_CORRUPT);
  }
  return value.getInt();
}

}  // namespace

int schema_version() { return schema::current_version(); }

int stored_schema_version(SQLite::Database& db) {
  return guarded("read schema version", [&] { return read_version(db); });
}

int ensure_schema(SQLite::Database& db) {
  return guarded("migrate schema", [&] {
    const int found = read_version(db);
    if (found > schema::current_version()) {
      throw SchemaVersionError(found, schema::current_version());
    }
    if (found == schema::current_version()) return found;
    if (in_transaction(db)) {
      throw TransactionError(
          "sluice: migrate schema: the sluice schema must be created or migrated outside the "
          "caller's transaction (open the database with sluice::open_database first)");
    }
    WriteTransaction tx(db);
    const int locked = read_version(db);  // another process may have migrated meanwhile
    if (locked > schema::current_version()) {
      throw SchemaVersionError(locked, schema::current_version());
    }
    for (int v = locked; v < schema::current_version(); ++v) db.exec(schema::migrations()[v]);
    db.exec("INSERT INTO sluice_meta (name, value) VALUES ('schema_version', " +
            std::to_string(schema::current_version()) +
            ") ON CONFLICT (name) DO UPDATE SET value = excluded.value");
    tx.commit();
    return found;
  });
}

namespace {

// What a read-only connection gets too: the busy handler, and a non-database file turned into
// SQLITE_NOTADB here by reading the schema, not later.
void prepare_connection(SQLite::Database& db, const Options& options) {
  sqlite3_busy_handler(
      db.getHandle(), busy_handler,
      const_cast<BusyTarget*>(busy_target(CommitSignal::of(db), options.busy_timeout.count())));
  db.exec("SELECT count(*) FROM sqlite_master");
}

// The pragmas that write: WAL for a file, the synchronous level.
void set_write_pragmas(SQLite::Database& db, const Options& options) {
  const std::string file = sqlite3_db_filename(db.getHandle(), "main");
  if (!file.empty()) db.exec("PRAGMA journal_mode = WAL");
  db.exec(options.synchronous == Synchronous::kFull ? "PRAGMA synchronous = FULL"
                                                    : "PRAGMA synchronous = NORMAL");
}

// Throws NotADatabaseError for a path that exists but is no regular file: SQLite would wait
// forever on a FIFO's reads and report a directory as "disk I/O error".
void refuse_non_regular_file(const std::string& path) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0 || S_ISREG(status.st_mode)) return;
  const char* what = S_ISDIR(status.st_mode)    ? "a directory"
                     : S_ISFIFO(status.st_mode) ? "a FIFO (named pipe)"
                     : S_ISSOCK(status.st_mode) ? "a socket"
                     : S_ISCHR(status.st_mode)  ? "a character device"
                     : S_ISBLK(status.st_mode)  ? "a block device"
                                                : "a special file";
  throw NotADatabaseError("sluice: open database: '" + path + "' is " + what +
                              ", not a sluice file (a sluice file is a regular file)",
                          SQLITE_NOTADB);
}

}  // namespace

void configure_connection(SQLite::Database& db, const Options& options) {
  guarded("configure connection", [&] {
    prepare_connection(db, options);
    set_write_pragmas(db, options);
  });
  remember_clock(db, options.clock);
}

SQLite::Database open_database(const std::string& path, const Options& options, OpenMode mode) {
  options.validate();
  const bool memory = path == ":memory:" || path.empty();
  if (mode != OpenMode::kCreate && !memory && !std::filesystem::exists(path)) {
    throw NotFound("sluice: open database: no file at '" + path + "' (only init creates one)");
  }
  if (!memory) refuse_non_regular_file(path);
  int flags = SQLITE_OPEN_NOMUTEX;
  flags |= mode == OpenMode::kReadOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (mode == OpenMode::kCreate) flags |= SQLITE_OPEN_CREATE;
  const std::string operation = "open database '" + path + "'";
  SQLite::Database db = guarded(operation.c_str(), [&] {
    SQLite::Database opened(memory ? ":memory:" : path, flags);
    prepare_connection(opened, options);
    return opened;
  });
  // Calls on this connection whose Options name no clock use this one (connection_clock.hpp).
  remember_clock(db, options.clock);
  if (mode == OpenMode::kReadOnly) {
    const int found = stored_schema_version(db);
    if (found > schema::current_version()) {
      throw SchemaVersionError(found, schema::current_version());
    }
    return db;
  }
  guarded("configure connection", [&] { set_write_pragmas(db, options); });
  ensure_schema(db);
  return db;
}

}  // namespace sluice
