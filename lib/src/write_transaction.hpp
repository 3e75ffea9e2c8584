// RAII write transaction. Every sluice write begins IMMEDIATE: a deferred transaction that reads
// and then writes gets SQLITE_BUSY at once instead of waiting for the busy timeout.
#pragma once

#include <SQLiteCpp/Database.h>

namespace sluice {

// Not thread-safe, like its connection. Rolls back unless commit() was called.
class WriteTransaction {
 public:
  explicit WriteTransaction(SQLite::Database& db);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  void commit();

 private:
  SQLite::Database& db_;
  bool open_ = true;
};

// True if a transaction is open on `db`.
bool in_transaction(SQLite::Database& db);

}  // namespace sluice
