// Who may write for a claim: its lifecycle in one place, for the C++ worker, the C API's worker
// and the SQL verbs alike.
//
// A claim (a row of sluice_claims) is a worker's durable record of the work it took, made before
// any handler runs. Its id is a fencing token: taken from a counter in the file, never reused.
// Every write its holder makes for it — delivering, advancing, renewing, releasing, done and
// fail from SQL — first checks, in the same write transaction, that the row with that id is
// still there. A worker that stalled (SIGSTOP, a suspended laptop, a debugger) while another one
// recovered its claim as crashed finds it gone when it resumes: its step is abandoned with
// nothing committed (an in-transaction handler's writes roll back with it) and the recovered
// events stay with whoever recovered them.
//
// A claim is recovered only when its worker is gone. Each worker is registered in
// sluice_workers (ids never reused) and, while it lives, holds the kernel lock of
// liveness_lock.hpp on the byte of its id: liveness comes from the kernel, across PID namespaces,
// without /proc and without renewing anything through the write lock. Where that lock cannot be
// had (no lock file beside the database: a read-only directory, an in-memory database, a file
// system without OFD locks) the worker falls back to its process identity and a lease that a
// LeaseKeeper renews (process_identity.hpp), as do claims written before schema version 6.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "liveness_lock.hpp"
#include "process_identity.hpp"
#include "sluice/error.hpp"
#include "sluice/options.hpp"

namespace sluice {

// This worker no longer holds the claim it was about to write for: it was recovered by another
// worker (which presumed this one dead) or removed with its consumer. The write transaction it was
// raised in must roll back.
class ClaimLost : public Error {
 public:
  using Error::Error;
};

// The consumer's row is no longer in the file (removed, perhaps added again under a new id): a
// worker delivers nothing more for the consumer it subscribed.
class ConsumerGone : public Error {
 public:
  using Error::Error;
};

// Whether the owners of claims live, asked by anyone who reads claims (workers, consumer
// removal, stats, check). Not thread-safe; reads only.
class ClaimLiveness {
 public:
  // For claims in the database at `path` ("" for an in-memory database).
  explicit ClaimLiveness(std::string path);

  // What a claim row says of its owner.
  struct Owner {
    std::optional<std::int64_t> worker_id;  // null for claims made before schema version 6
    std::optional<bool> locked;  // the worker's row: holds its kernel lock; null: no such row
    std::string owner;           // "pid:start time:token:boot id:PID namespace"
    TimePoint lease_until;
  };
  // True once the claim may be taken over at `now`: its worker is known to be gone, or whether it
  // lives cannot be known and its lease has run out.
  bool abandoned(const Owner& owner, TimePoint now);

 private:
  std::optional<LivenessProbe> probe_;
};

// Not thread-safe: bound to one connection, used by one thread at a time.
class ClaimBook {
 public:
  // `kind` is what sluice_workers records: "worker" (C++ or C API) or "sql".
  ClaimBook(SQLite::Database& db, const Options& options, std::string kind);
  ~ClaimBook();
  ClaimBook(const ClaimBook&) = delete;
  ClaimBook& operator=(const ClaimBook&) = delete;

  // The consumers whose names this worker records when it registers (a JSON array).
  void set_consumers(std::string names_json) { consumers_ = std::move(names_json); }

  // Registers this worker now, in a write transaction of its own: a started worker that has
  // claimed nothing yet is then seen alive (sluice workers, check). One write at start; an idle
  // worker writes nothing after it. Called outside a transaction. Never throws: a worker that could
  // not register now registers with its first claim.
  void register_worker() noexcept;
  // Ends the registration: deletes the worker's row (in a write transaction of its own) and lets
  // go of its lock. Called outside a transaction with no claim in hand. Never throws: a worker
  // row left behind is a dead worker's to everyone else.
  void unregister_worker() noexcept;
  // Whether this worker's liveness rests on a lease that must be renewed (LeaseKeeper), not on
  // the kernel lock.
  bool needs_lease() const { return !lock_.has_value(); }
  const std::string& owner() const { return identity_.owner(); }

  // The following run inside the caller's write transaction.

  // Opens a claim of `consumer_id` over fresh events after `cursor`. Returns its id. Throws
  // ConsumerGone when the consumer is not in the file. Registers this worker first, in the same
  // transaction, if it is not yet.
  std::int64_t open(std::int64_t consumer_id, std::int64_t cursor, TimePoint now);
  // Throws ClaimLost unless this worker still holds claim `claim_id`.
  void check_held(std::int64_t claim_id);
  // Reuses a finished claim for the next one: fresh events in (from_seq, to_seq], leased anew.
  void renew(std::int64_t claim_id, std::int64_t from_seq, std::int64_t to_seq, TimePoint now);
  // Notes that the claim's fresh events up to `from_seq` are finished.
  void advance(std::int64_t claim_id, std::int64_t from_seq);
  // Moves the claim's end to `to_seq` (it took more fresh events).
  void move_end(std::int64_t claim_id, std::int64_t to_seq);
  // Deletes the claim row: finished, given back, or recovered.
  void close(std::int64_t claim_id);

  // Another worker's claim of a consumer.
  struct Foreign {
    std::int64_t id = 0;
    std::string owner;
    std::int64_t from_seq = 0;
    std::int64_t to_seq = 0;
    std::optional<std::int64_t> worker_id;
    bool abandoned = false;
  };
  // Other workers' claims of `consumer_id`, each with whether it may be taken over at `now`.
  // With `first_abandoned_only`, stops at the first abandoned one.
  std::vector<Foreign> foreign(std::int64_t consumer_id, TimePoint now,
                               bool first_abandoned_only = false);
  // Whether another worker holds any claim of `consumer_id`.
  bool any_foreign(std::int64_t consumer_id);
  // After a recovered claim was closed: forgets its worker when no claim of it is left.
  void forget_worker_if_done(std::int64_t worker_id);

 private:
  // Registers this worker and takes its liveness lock in the caller's write transaction, unless
  // an earlier registration is known to have committed.
  void ensure_registered();
  // Deletes the rows of registered workers whose lock is free and who hold no claim.
  void forget_dead_workers();

  SQLite::Database& db_;
  const Options& options_;
  const std::string kind_;
  const std::string path_;  // "" for an in-memory database
  WorkerIdentity identity_;
  ClaimLiveness liveness_;
  std::string consumers_ = "[]";
  std::optional<std::int64_t> worker_id_;
  bool confirmed_ = false;  // worker_id_'s row was seen after its transaction
  std::optional<LivenessLock> lock_;

  SQLite::Statement next_claim_id_;
  SQLite::Statement insert_;
  SQLite::Statement held_;
  SQLite::Statement renew_;
  SQLite::Statement advance_;
  SQLite::Statement move_end_;
  SQLite::Statement delete_;
  SQLite::Statement foreign_;
  SQLite::Statement any_foreign_;
  SQLite::Statement forget_worker_;
};

}  // namespace sluice
