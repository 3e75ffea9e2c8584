// An event handed to something outside the file (an outside-transaction or batch handler, the
// relay, an SQL claimer) must never carry the effect of a commit that a power cut takes back.
// Under synchronous = NORMAL (or OFF) a commit does not sync the WAL, so the claim's commit, and
// the app's commit of the event before it, may still be only in the disk cache when the handler
// sends the email. While a DurableClaims::Scope lives, the connection's commits sync (FULL): in
// WAL mode that syncs every earlier frame too, so one sync per claim covers its events and their
// causes. In-transaction consumers do not need it: their effect is in the file, lost with its
// cause.
#pragma once

#include <SQLiteCpp/Database.h>

#include <optional>

namespace sluice {

// Not thread-safe: bound to one connection, used by one thread at a time.
class DurableClaims {
 public:
  // `db` must outlive the object. Changes nothing yet.
  explicit DurableClaims(SQLite::Database& db);
  DurableClaims(const DurableClaims&) = delete;
  DurableClaims& operator=(const DurableClaims&) = delete;

  // Raises the connection to synchronous = FULL while it lives, when its level is lower and it
  // is on a file; puts the level back when it ends. Made outside a transaction.
  class Scope {
   public:
    explicit Scope(DurableClaims* owner) : owner_(owner) {}
    ~Scope();
    Scope(Scope&& other) noexcept : owner_(other.owner_), level_(other.level_) {
      other.owner_ = nullptr;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;

   private:
    friend class DurableClaims;
    DurableClaims* owner_;
    int level_ = 2;  // the level to put back
  };
  Scope scope();

 private:
  SQLite::Database& db_;
  const bool on_file_;
};

}  // namespace sluice
