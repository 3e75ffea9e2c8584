#include "handler_context.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "sluice/error.hpp"
#include "sqlite_error.hpp"

namespace sluice {
namespace {

// The guards alive on each connection that has any, latest last; the latest is installed.
// SQLite offers no way to read a connection's authorizer back, so a guard that goes learns here
// which one to put back.
std::mutex guards_mutex;
std::map<sqlite3*, std::vector<TransactionControlGuard*>> guards;

// Errors of the storage rather than of the handler: the whole transaction is abandoned and the
// claim retried later, without spending an attempt.
bool is_storage_failure(int code) {
  switch (code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_NOMEM:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
      return true;
    default:
      return false;
  }
}

}  // namespace

TransactionControlGuard::TransactionControlGuard(SQLite::Database& db) : db_(db) {
  std::lock_guard lock(guards_mutex);
  guards[db_.getHandle()].push_back(this);
  sqlite3_set_authorizer(db_.getHandle(), &TransactionControlGuard::authorize, this);
}

TransactionControlGuard::~TransactionControlGuard() {
  std::lock_guard lock(guards_mutex);
  auto& alive = guards[db_.getHandle()];
  alive.erase(std::find(alive.begin(), alive.end(), this));
  if (alive.empty()) {
    guards.erase(db_.getHandle());
    sqlite3_set_authorizer(db_.getHandle(), nullptr, nullptr);
  } else {
    sqlite3_set_authorizer(db_.getHandle(), &TransactionControlGuard::authorize, alive.back());
  }
}

int TransactionControlGuard::authorize(void* self, int action, const char*, const char*,
                                       const char*, const char*) {
  auto* guard = static_cast<TransactionControlGuard*>(self);
  if (!guard->armed_) return SQLITE_OK;
  switch (action) {
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      guard->violated_ = true;
      return SQLITE_DENY;
    // Reads, and the writes that sqlite3_total_changes() counts.
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
      return SQLITE_OK;
    default:
      guard->uncounted_ = true;
      return SQLITE_OK;
  }
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

Outcome call_handler(const Handler& handler, const Event& event, HandlerContext& context,
                     TransactionControlGuard& guard) {
  Outcome outcome;
  guard.arm();
  try {
    handler(event, context);
    outcome = std::move(context).requested();
  } catch (const PermanentError& e) {
    outcome = Outcome::permanent(e.what());
  } catch (const Throttled& e) {
    outcome = Outcome::throttle(e.delay(), e.reason());
  } catch (const SQLite::Exception& e) {
    guard.disarm();
    if (is_storage_failure(e.getExtendedErrorCode())) throw_database_error("deliver", e);
    outcome = Outcome::retry(e.what());
  } catch (const DatabaseError& e) {
    guard.disarm();
    if (is_storage_failure(e.code())) throw;
    outcome = Outcome::retry(e.what());
  } catch (const std::exception& e) {
    outcome = Outcome::retry(e.what());
  } catch (...) {
    outcome = Outcome::retry("the handler threw a non-standard exception");
  }
  guard.disarm();
  if (guard.violated()) {
    outcome = Outcome::permanent(
        "the handler tried to begin, commit or roll back sluice's delivery transaction; "
        "sluice commits it (use ctx.db() for writes only)");
  }
  return outcome;
}

Outcome call_outside_handler(const Handler& handler, const Event& event, HandlerContext& context) {
  try {
    handler(event, context);
    return std::move(context).requested();
  } catch (const PermanentError& e) {
    return Outcome::permanent(e.what());
  } catch (const Throttled& e) {
    return Outcome::throttle(e.delay(), e.reason());
  } catch (const std::exception& e) {
    return Outcome::retry(e.what());
  } catch (...) {
    return Outcome::retry("the handler threw a non-standard exception");
  }
}

}  // namespace sluice
