// RAII read transaction: the statements run in it share one snapshot and one read lock, where
// each statement outside a transaction begins and ends a read transaction of its own (in WAL
// mode two locks on the -shm file apiece).
#pragma once

#include <SQLiteCpp/Database.h>

namespace sluice {

// Not thread-safe, like its connection. Ends the transaction when it goes; it must not write.
class ReadTransaction {
 public:
  explicit ReadTransaction(SQLite::Database& db);
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  SQLite::Database& db_;
};

}  // namespace sluice
