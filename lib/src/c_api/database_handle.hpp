// What a sluice_db handle holds.
#pragma once

#include <SQLiteCpp/Database.h>

#include <atomic>
#include <optional>
#include <string>
#include <utility>

#include "sluice/error.hpp"
#include "sluice/sluice.h"

// A connection opened by sluice_open, or a sluice_harness's (which owns it); used by one thread
// at a time, like the connection. A call made while another thread is inside one on the same
// handle is refused (SLUICE_INVALID) rather than let two threads drive one connection.
struct sluice_db {
  explicit sluice_db(SQLite::Database&& opened) : owned(std::move(opened)), db(*owned) {}
  // A handle on a connection `owner` keeps, which must outlive it.
  explicit sluice_db(SQLite::Database& owner) : db(owner) {}
  sluice_db(const sluice_db&) = delete;
  sluice_db& operator=(const sluice_db&) = delete;

  std::optional<SQLite::Database> owned;
  SQLite::Database& db;
  std::atomic<bool> in_use{false};
};

namespace sluice::c_api {

// The connection of `db` for the length of one call of `function`. Throws InvalidArgument for a
// NULL handle or one another thread is using.
class DatabaseUse {
 public:
  DatabaseUse(sluice_db* db, const char* function) : db_(db) {
    if (db_ == nullptr) throw InvalidArgument(std::string(function) + ": db is NULL");
    if (db_->in_use.exchange(true)) {
      db_ = nullptr;
      throw InvalidArgument(std::string(function) +
                            ": the sluice_db is in use by another call (another thread's, or a "
                            "harness's drain from its handler); a handle (like its sqlite3 "
                            "connection) takes one thread at a time");
    }
  }
  ~DatabaseUse() {
    if (db_ != nullptr) db_->in_use = false;
  }
  DatabaseUse(const DatabaseUse&) = delete;
  DatabaseUse& operator=(const DatabaseUse&) = delete;

  SQLite::Database& db() { return db_->db; }

 private:
  sluice_db* db_;
};

}  // namespace sluice::c_api
