// What a handler sees during one delivery, and the guard that keeps it from ending sluice's
// transaction.
#pragma once

#include <SQLiteCpp/Database.h>

#include <string>
#include <utility>

#include "sluice/consumer.hpp"
#include "sluice/outbox.hpp"

namespace sluice {

// Not thread-safe. Installs an authorizer on `db` for its lifetime that, while armed, refuses
// BEGIN, COMMIT, ROLLBACK and SAVEPOINT statements and remembers that one was tried, and notes
// statements prepared that may write without counting in sqlite3_total_changes(). Of several
// guards on one connection (the testing kit's beside its worker's) the latest made is in force;
// when it goes, the latest of the others is put back.
class TransactionControlGuard {
 public:
  explicit TransactionControlGuard(SQLite::Database& db);
  ~TransactionControlGuard();
  TransactionControlGuard(const TransactionControlGuard&) = delete;
  TransactionControlGuard& operator=(const TransactionControlGuard&) = delete;

  void arm() {
    armed_ = true;
    violated_ = false;
    uncounted_ = false;
  }
  void disarm() { armed_ = false; }
  // True if the handler tried transaction control since arm().
  bool violated() const { return violated_; }
  // True if the handler prepared, since arm(), a statement that may change the file without
  // counting in sqlite3_total_changes() (DDL, a PRAGMA, ANALYZE, VACUUM, ATTACH, ...).
  bool prepared_uncounted() const { return uncounted_; }

 private:
  static int authorize(void* self, int action, const char*, const char*, const char*, const char*);
  SQLite::Database& db_;
  bool armed_ = false;
  bool violated_ = false;
  bool uncounted_ = false;
};

// Not thread-safe: lives for one handler call.
class HandlerContext final : public Context {
 public:
  // `db` and `outbox` are null for an outside-transaction consumer.
  HandlerContext(const std::string& consumer, int attempt, SQLite::Database* db, Outbox* outbox)
      : consumer_(consumer), attempt_(attempt), db_(db), outbox_(outbox) {}

  const std::string& consumer() const override { return consumer_; }
  int attempt() const override { return attempt_; }
  SQLite::Database& db() override;
  EnqueueResult enqueue(const NewEvent& event) override;
  void snooze(Duration delay) override { requested_ = Outcome::snooze(delay); }
  void retry(std::string error) override { requested_ = Outcome::retry(std::move(error)); }
  void dead_letter(std::string error) override {
    requested_ = Outcome::permanent(std::move(error));
  }
  void throttle(Duration delay, std::string reason) override {
    requested_ = Outcome::throttle(delay, std::move(reason));
  }

  // What the handler asked for through snooze, retry or dead_letter; done if nothing.
  Outcome requested() && { return std::move(requested_); }

 private:
  const std::string& consumer_;
  int attempt_;
  SQLite::Database* db_;
  Outbox* outbox_;
  Outcome requested_;
};

// Calls `handler` on `event` as one in-transaction attempt, with `guard` armed, and returns the
// Outcome by Handler's contract: what it asked for through `context`; permanent for
// PermanentError or for trying to end the transaction; throttle for Throttled; retry for any other
// exception. A storage failure (disk full, I/O, busy, a damaged file) is no fault of the handler:
// it leaves as a DatabaseError, so that the caller abandons the transaction without spending an
// attempt.
Outcome call_handler(const Handler& handler, const Event& event, HandlerContext& context,
                     TransactionControlGuard& guard);

// Calls `handler` on `event` as one outside-transaction attempt (`context` has no connection) and
// returns the Outcome by Handler's contract: what it asked for through `context`; permanent for
// PermanentError; throttle for Throttled; retry for any other exception.
Outcome call_outside_handler(const Handler& handler, const Event& event, HandlerContext& context);

}  // namespace sluice
