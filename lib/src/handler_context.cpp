#include "handler_context.hpp"

#include <sqlite3.h>

#include "sluice/error.hpp"

namespace sluice {

TransactionControlGuard::TransactionControlGuard(SQLite::Database& db) : db_(db) {
  sqlite3_set_authorizer(db_.getHandle(), &TransactionControlGuard::authorize, this);
}

TransactionControlGuard::~TransactionControlGuard() {
  sqlite3_set_authorizer(db_.getHandle(), nullptr, nullptr);
}

int TransactionControlGuard::authorize(void* self, int action, const char*, const char*,
                                       const char*, const char*) {
  auto* guard = static_cast<TransactionControlGuard*>(self);
  if (guard->armed_ && (action == SQLITE_TRANSACTION || action == SQLITE_SAVEPOINT)) {
    guard->violated_ = true;
    return SQLITE_DENY;
  }
  return SQLITE_OK;
}

SQLite::Database& HandlerContext::db() {
  if (db_ == nullptr) {
    throw TransactionError("sluice: consumer '" + consumer_ +
                           "' runs outside the transaction; its handler has no connection");
  }
  return *db_;
}

EnqueueResult HandlerContext::enqueue(const NewEvent& event) {
  if (outbox_ == nullptr) {
    throw TransactionError("sluice: consumer '" + consumer_ +
                           "' runs outside the transaction; enqueue with your own Outbox");
  }
  return outbox_->enqueue(event);
}

}  // namespace sluice
