// What a sluice_db handle holds.
#pragma once

#include <SQLiteCpp/Database.h>

#include <atomic>
#include <string>
#include <utility>

#include "sluice/error.hpp"
#include "sluice/sluice.h"

// A connection opened by sluice_open; used by one thread at a time, like the connection. A call
// made while another thread is inside one on the same handle is refused (SLUICE_INVALID) rather
// than let two threads drive one connection.
struct sluice_db {
  explicit sluice_db(SQLite::Database opened) : db(std::move(opened)) {}
  SQLite::Database db;
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
                            ": the sluice_db is in use by another thread; a handle (like its "
                            "sqlite3 connection) takes one thread at a time");
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
