#include "sql_connection.hpp"

#include <mutex>
#include <unordered_map>

#include "connection_clock.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sqlite_api.hpp"

namespace sluice::sqlext {
namespace {

std::mutex states_mutex;

std::unordered_map<sqlite3*, SqlConnection*>& states() {
  static auto* all = new std::unordered_map<sqlite3*, SqlConnection*>();  // closed at exit too
  return *all;
}

// The key of the extension's state among the connection's cached objects.
const char kStateKey = 0;

}  // namespace

SqlConnection::SqlConnection(sqlite3* handle)
    : handle_(handle), db_(adopt_connection(handle)), clock_(std::make_shared<SettableClock>()) {
  options_.clock = clock_;
  // Engine calls given no clock (stats, dead letters) read the connection's too.
  remember_clock(db_, clock_);
  std::lock_guard lock(states_mutex);
  states()[handle_] = this;
}

SqlConnection::~SqlConnection() {
  consumers_.clear();  // their statements go before the adopted connection object
  change_wait_.reset();
  std::lock_guard lock(states_mutex);
  states().erase(handle_);
}

void SqlConnection::attach(sqlite3* handle) {
  connection_cached(handle, &kStateKey, [handle] {
    return std::unique_ptr<ConnectionCached>(new SqlConnection(handle));
  });
}

SqlConnection& SqlConnection::of(sqlite3* handle) {
  std::lock_guard lock(states_mutex);
  const auto found = states().find(handle);
  if (found == states().end()) {
    throw Error("sluice: the extension's state for this connection is gone (closing?)");
  }
  return *found->second;
}

void SqlConnection::require_schema() {
  if (schema_ok_) return;
  const int found = stored_schema_version(db_);
  if (found > schema_version()) throw SchemaVersionError(found, schema_version());
  if (found < schema_version()) {
    throw Error(found == 0
                    ? "sluice: the database has no sluice schema: run `sluice init FILE`, "
                      "or SELECT sluice_init() outside a transaction"
                    : "sluice: the database has sluice schema version " + std::to_string(found) +
                          ", this build uses " + std::to_string(schema_version()) +
                          ": run `sluice migrate FILE`, or SELECT sluice_init() outside "
                          "a transaction");
  }
  schema_ok_ = true;
}

SqlConsumer& SqlConnection::consumer(const std::string& name) {
  auto& slot = consumers_[name];
  if (!slot) slot = std::make_unique<SqlConsumer>(db_, name, clock_);
  return *slot;
}

ChangeWait& SqlConnection::change_wait() {
  if (!change_wait_) change_wait_ = std::make_unique<ChangeWait>(db_);
  return *change_wait_;
}

}  // namespace sluice::sqlext
