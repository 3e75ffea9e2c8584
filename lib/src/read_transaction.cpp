#include "read_transaction.hpp"

#include "write_transaction.hpp"

namespace sluice {

ReadTransaction::ReadTransaction(SQLite::Database& db) : db_(db) { db_.exec("BEGIN"); }

ReadTransaction::~ReadTransaction() {
  // Nothing was written, so ending it cannot fail for want of the lock; a failed statement may
  // have ended it already.
  if (in_transaction(db_)) db_.tryExec("COMMIT");
}

}  // namespace sluice
