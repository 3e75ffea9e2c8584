// RAII write transaction. Every sluice write begins IMMEDIATE: a deferred transaction that reads
// and then writes gets SQLITE_BUSY at once instead of waiting for the busy timeout.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

namespace sluice {

// Not thread-safe, like its connection. Rolls back unless commit() was called.
class WriteTransaction {
 public:
  explicit WriteTransaction(SQLite::Database& db);
  // The same with `begin` ("BEGIN IMMEDIATE") and `commit` ("COMMIT") prepared once on `db` by
  // the caller, who keeps them alive: a transaction per delivered event parsed both each time.
  WriteTransaction(SQLite::Database& db, SQLite::Statement& begin, SQLite::Statement& commit);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  void commit();

 private:
  SQLite::Database& db_;
  SQLite::Statement* commit_ = nullptr;  // null: COMMIT is parsed at commit()
  bool open_ = true;
};

// True if a transaction is open on `db`.
bool in_transaction(SQLite::Database& db);

}  // namespace sluice
