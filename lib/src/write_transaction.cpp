#include "write_transaction.hpp"

#include <sqlite3.h>

#include "rewind.hpp"

namespace sluice {

WriteTransaction::WriteTransaction(SQLite::Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

WriteTransaction::WriteTransaction(SQLite::Database& db, SQLite::Statement& begin,
                                   SQLite::Statement& commit)
    : db_(db), commit_(&commit) {
  rewind(begin);
  begin.exec();
  rewind(begin);
}

WriteTransaction::~WriteTransaction() {
  // A failed COMMIT may already have rolled back; ROLLBACK then reports "no transaction".
  if (open_ && in_transaction(db_))
    sqlite3_exec(db_.getHandle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
  if (commit_ == nullptr) {
    db_.exec("COMMIT");
  } else {
    rewind(*commit_);
    commit_->exec();
    rewind(*commit_);
  }
  open_ = false;
}

bool in_transaction(SQLite::Database& db) { return sqlite3_get_autocommit(db.getHandle()) == 0; }

}  // namespace sluice
