// What the extension keeps for one host connection that loaded it.
#pragma once

#include <SQLiteCpp/Database.h>
#include <sqlite3.h>

#include <map>
#include <memory>
#include <string>

#include "change_wait.hpp"
#include "connection_cache.hpp"
#include "settable_clock.hpp"
#include "sluice/options.hpp"
#include "sql_consumer.hpp"

namespace sluice::sqlext {

// Not thread-safe: used where the host uses its connection. Destroyed while the host closes the
// connection (connection_cache.hpp), which finalizes every statement prepared for it.
class SqlConnection : public ConnectionCached {
 public:
  // Attaches the state to `handle` for as long as the connection is open; once per connection.
  static void attach(sqlite3* handle);

  // The state of the connection `handle`. Throws Error if the extension was not loaded on it.
  static SqlConnection& of(sqlite3* handle);

  ~SqlConnection() override;

  // The host's connection, as the engine takes it.
  SQLite::Database& db() { return db_; }

  // Throws SchemaVersionError for a newer schema, Error telling what to run for an older or no
  // sluice schema. Reads the file on the first call only.
  void require_schema();

  // The connection's clock (sluice_clock_set), which every sluice function called on it reads.
  SettableClock& clock() { return *clock_; }

  // Default options with the connection's clock, for the engine's calls.
  const Options& options() const { return options_; }

  // The consumer `name` as driven through this connection.
  SqlConsumer& consumer(const std::string& name);

  // sluice_wait() on this connection's file.
  ChangeWait& change_wait();

 private:
  explicit SqlConnection(sqlite3* handle);

  sqlite3* handle_;
  SQLite::Database db_;
  std::shared_ptr<SettableClock> clock_;
  Options options_;
  bool schema_ok_ = false;
  std::map<std::string, std::unique_ptr<SqlConsumer>> consumers_;
  std::unique_ptr<ChangeWait> change_wait_;  // made on first use: most hosts never wait
};

}  // namespace sluice::sqlext
