#include "claim_book.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <climits>

#include "log_to.hpp"
#include "rewind.hpp"
#include "saturating_time.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

std::string database_path(SQLite::Database& db) {
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  return file != nullptr ? file : "";
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

// How many dead workers' rows a registration forgets at most, so that it stays short.
constexpr int kForgetAtOnce = 100;

}  // namespace

ClaimLiveness::ClaimLiveness(std::string path) {
  if (!path.empty()) probe_.emplace(std::move(path));
}

bool ClaimLiveness::abandoned(const Owner& owner, TimePoint now) {
  if (owner.worker_id) {
    // Registered workers leave their row only when they stop, with no claim left, or once
    // found dead: a claim naming a worker without a row is its dead worker's.
    if (!owner.locked) return true;
    if (*owner.locked && probe_) {
      if (const std::optional<bool> held = probe_->held(*owner.worker_id)) return !*held;
    }
  }
  return claim_abandoned(owner.owner, owner.lease_until, now);
}

ClaimBook::ClaimBook(SQLite::Database& db, const Options& options, std::string kind)
    : db_(db),
      options_(options),
      kind_(std::move(kind)),
      path_(database_path(db)),
      liveness_(path_),
      next_claim_id_(db,
                     "UPDATE sluice_meta SET value = value + 1 WHERE name = 'claim_ids' "
                     "RETURNING value"),
      // The claim names its consumer only while the consumer is in the file.
      insert_(db,
              "INSERT INTO sluice_claims (id, consumer_id, owner, pid, from_seq, to_seq, "
              "lease_until, created_at, worker_id) SELECT ?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8 "
              "WHERE EXISTS (SELECT 1 FROM sluice_consumers WHERE id = ?2)"),
      held_(db, "SELECT 1 FROM sluice_claims WHERE id = ? AND owner = ?"),
      renew_(db,
             "UPDATE sluice_claims SET from_seq = ?2, to_seq = ?3, lease_until = ?4, "
             "created_at = ?5 WHERE id = ?1 AND owner = ?6"),
      advance_(db, "UPDATE sluice_claims SET from_seq = ?2 WHERE id = ?1 AND owner = ?3"),
      move_end_(db, "UPDATE sluice_claims SET to_seq = ?2 WHERE id = ?1 AND owner = ?3"),
      delete_(db, "DELETE FROM sluice_claims WHERE id = ?"),
      foreign_(db,
               "SELECT c.id, c.owner, c.from_seq, c.to_seq, c.lease_until, c.worker_id, w.locked "
               "FROM sluice_claims c LEFT JOIN sluice_workers w ON w.id = c.worker_id "
               "WHERE c.consumer_id = ?1 AND c.owner <> ?2"),
      any_foreign_(db, "SELECT 1 FROM sluice_claims WHERE consumer_id = ? AND owner <> ? LIMIT 1"),
      forget_worker_(db,
                     "DELETE FROM sluice_workers WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM "
                     "sluice_claims WHERE worker_id = ?1)") {}

ClaimBook::~ClaimBook() = default;

void ClaimBook::ensure_registered() {
  if (worker_id_ && confirmed_) return;
  if (worker_id_) {
    SQLite::Statement row(db_, "SELECT 1 FROM sluice_workers WHERE id = ?");
    row.bind(1, static_cast<int64_t>(*worker_id_));
    if (row.executeStep()) {
      confirmed_ = true;  // the transaction that registered it committed
      return;
    }
    // It rolled back: registered again below.
  }
  forget_dead_workers();
  const TimePoint now = (options_.clock ? options_.clock : system_clock())->now();
  SQLite::Statement insert(db_,
                           "INSERT INTO sluice_workers (pid, host, kind, consumers, locked, "
                           "started_at) VALUES (?, ?, ?, ?, 0, ?)");
  insert.bind(1, static_cast<int64_t>(getpid()));
  insert.bind(2, host_name());
  insert.bind(3, kind_);
  insert.bind(4, consumers_);
  insert.bind(5, static_cast<int64_t>(to_millis(now)));
  insert.exec();
  const std::int64_t id = db_.getLastInsertRowid();
  // Locked before the row commits: whoever sees the row can ask the kernel. A registration
  // rolled back may leave the id to the next one, whose lock this worker holds already.
  if (!worker_id_ || *worker_id_ != id || !lock_) {
    lock_.reset();
    if (!path_.empty()) lock_ = LivenessLock::take(path_, id);
    if (!lock_ && !path_.empty()) {
      log_to(options_, LogLevel::kWarn,
             "worker liveness falls back to leases: the lock file cannot be locked",
             {{"lock_file", liveness_lock_path(path_)}});
    }
  }
  if (lock_) {
    SQLite::Statement locked(db_, "UPDATE sluice_workers SET locked = 1 WHERE id = ?");
    locked.bind(1, static_cast<int64_t>(id));
    locked.exec();
  }
  worker_id_ = id;
  confirmed_ = false;
}

void ClaimBook::register_worker() noexcept {
  try {
    WriteTransaction tx(db_);
    ensure_registered();
    tx.commit();
    confirmed_ = true;
  } catch (const std::exception& e) {
    log_to(options_, LogLevel::kWarn,
           "could not register the worker at start; it registers with its first claim",
           {{"error", e.what()}});
  }
}

void ClaimBook::unregister_worker() noexcept {
  if (!worker_id_) return;
  try {
    WriteTransaction tx(db_);
    SQLite::Statement forget(db_,
                             "DELETE FROM sluice_workers WHERE id = ?1 AND NOT EXISTS (SELECT 1 "
                             "FROM sluice_claims WHERE worker_id = ?1)");
    forget.bind(1, static_cast<int64_t>(*worker_id_));
    forget.exec();
    tx.commit();
  } catch (const std::exception& e) {
    log_to(options_, LogLevel::kWarn, "could not remove the worker's registration",
           {{"error", e.what()}});
  }
  worker_id_.reset();
  confirmed_ = false;
  lock_.reset();
}

void ClaimBook::forget_dead_workers() {
  if (path_.empty()) return;
  SQLite::Statement candidates(
      db_,
      "SELECT id FROM sluice_workers w WHERE locked = 1 AND NOT EXISTS (SELECT 1 FROM "
      "sluice_claims c WHERE c.worker_id = w.id) LIMIT ?");
  candidates.bind(1, kForgetAtOnce);
  std::vector<std::int64_t> dead;
  LivenessProbe probe(path_);
  while (candidates.executeStep()) {
    const std::int64_t id = candidates.getColumn(0).getInt64();
    const std::optional<bool> held = probe.held(id);
    if (held && !*held) dead.push_back(id);
  }
  candidates.reset();
  for (const std::int64_t id : dead) forget_worker_if_done(id);
}

std::int64_t ClaimBook::open(std::int64_t consumer_id, std::int64_t cursor, TimePoint now) {
  ensure_registered();
  rewind(next_claim_id_);
  if (!next_claim_id_.executeStep()) {
    throw DatabaseError("sluice: the file has no claim id counter (schema version 6)", 0);
  }
  const std::int64_t id = next_claim_id_.getColumn(0).getInt64();
  rewind(next_claim_id_);
  rewind(insert_);
  insert_.bind(1, static_cast<int64_t>(id));
  insert_.bind(2, static_cast<int64_t>(consumer_id));
  insert_.bindNoCopy(3, identity_.owner());
  insert_.bind(4, static_cast<int64_t>(identity_.pid()));
  insert_.bind(5, static_cast<int64_t>(cursor));
  insert_.bind(6, static_cast<int64_t>(to_millis(add_saturating(now, options_.claim_lease))));
  insert_.bind(7, static_cast<int64_t>(to_millis(now)));
  if (worker_id_) {
    insert_.bind(8, static_cast<int64_t>(*worker_id_));
  } else {
    insert_.bind(8);
  }
  if (insert_.exec() == 0) {
    throw ConsumerGone("sluice: consumer " + std::to_string(consumer_id) +
                       " is no longer in the file (removed, perhaps added again under a new id)");
  }
  return id;
}

void ClaimBook::check_held(std::int64_t claim_id) {
  rewind(held_);
  held_.bind(1, static_cast<int64_t>(claim_id));
  held_.bindNoCopy(2, identity_.owner());
  const bool held = held_.executeStep();
  rewind(held_);
  if (!held) {
    // Recovered as a dead worker's claim, perhaps with this worker's row (forget_worker_if_done):
    // the next claim registers it again rather than name a row that others take for a dead one.
    confirmed_ = false;
    throw ClaimLost("sluice: claim " + std::to_string(claim_id) +
                    " is no longer this worker's: another worker recovered it (this one was "
                    "presumed dead) or its consumer was removed");
  }
}

void ClaimBook::renew(std::int64_t claim_id, std::int64_t from_seq, std::int64_t to_seq,
                      TimePoint now) {
  rewind(renew_);
  renew_.bind(1, static_cast<int64_t>(claim_id));
  renew_.bind(2, static_cast<int64_t>(from_seq));
  renew_.bind(3, static_cast<int64_t>(to_seq));
  renew_.bind(4, static_cast<int64_t>(to_millis(add_saturating(now, options_.claim_lease))));
  renew_.bind(5, static_cast<int64_t>(to_millis(now)));
  renew_.bindNoCopy(6, identity_.owner());
  if (renew_.exec() == 0) check_held(claim_id);
}

void ClaimBook::advance(std::int64_t claim_id, std::int64_t from_seq) {
  rewind(advance_);
  advance_.bind(1, static_cast<int64_t>(claim_id));
  advance_.bind(2, static_cast<int64_t>(from_seq));
  advance_.bindNoCopy(3, identity_.owner());
  if (advance_.exec() == 0) check_held(claim_id);
}

void ClaimBook::move_end(std::int64_t claim_id, std::int64_t to_seq) {
  rewind(move_end_);
  move_end_.bind(1, static_cast<int64_t>(claim_id));
  move_end_.bind(2, static_cast<int64_t>(to_seq));
  move_end_.bindNoCopy(3, identity_.owner());
  if (move_end_.exec() == 0) check_held(claim_id);
}

void ClaimBook::close(std::int64_t claim_id) {
  rewind(delete_);
  delete_.bind(1, static_cast<int64_t>(claim_id));
  delete_.exec();
}

std::vector<ClaimBook::Foreign> ClaimBook::foreign(std::int64_t consumer_id, TimePoint now,
                                                   bool first_abandoned_only) {
  std::vector<Foreign> found;
  rewind(foreign_);
  foreign_.bind(1, static_cast<int64_t>(consumer_id));
  foreign_.bindNoCopy(2, identity_.owner());
  while (foreign_.executeStep()) {
    Foreign claim;
    claim.id = foreign_.getColumn(0).getInt64();
    claim.owner = foreign_.getColumn(1).getString();
    claim.from_seq = foreign_.getColumn(2).getInt64();
    claim.to_seq = foreign_.getColumn(3).getInt64();
    ClaimLiveness::Owner owner{
        .owner = claim.owner, .lease_until = TimePoint(Duration(foreign_.getColumn(4).getInt64()))};
    if (!foreign_.getColumn(5).isNull()) {
      claim.worker_id = foreign_.getColumn(5).getInt64();
      owner.worker_id = claim.worker_id;
      if (!foreign_.getColumn(6).isNull()) owner.locked = foreign_.getColumn(6).getInt() != 0;
    }
    claim.abandoned = liveness_.abandoned(owner, now);
    const bool stop = first_abandoned_only && claim.abandoned;
    found.push_back(std::move(claim));
    if (stop) break;
  }
  rewind(foreign_);
  return found;
}

bool ClaimBook::any_foreign(std::int64_t consumer_id) {
  rewind(any_foreign_);
  any_foreign_.bind(1, static_cast<int64_t>(consumer_id));
  any_foreign_.bindNoCopy(2, identity_.owner());
  const bool any = any_foreign_.executeStep();
  rewind(any_foreign_);
  return any;
}

void ClaimBook::forget_worker_if_done(std::int64_t worker_id) {
  rewind(forget_worker_);
  forget_worker_.bind(1, static_cast<int64_t>(worker_id));
  forget_worker_.exec();
  rewind(forget_worker_);
}

}  // namespace sluice
