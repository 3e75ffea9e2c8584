// A consumer driven from SQL: the app claims a batch, then for each event does its own writes and
// sluice_done (or sluice_fail) in one transaction, as the in-transaction handler of a worker does.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "deliverer.hpp"

namespace sluice::sqlext {

// Not thread-safe: bound to one connection, used where the connection is used.
class SqlConsumer {
 public:
  // `db` must outlive the object. Times are read from `clock`, the connection's. Prepares
  // statements; reads nothing yet.
  SqlConsumer(SQLite::Database& db, std::string name, std::shared_ptr<Clock> clock);
  SqlConsumer(const SqlConsumer&) = delete;
  SqlConsumer& operator=(const SqlConsumer&) = delete;

  // Gives back what is left of the previous claim, then durably claims up to `limit` due events
  // of the topics the consumer subscribes to, recovering first the claims of workers that died
  // (the engine's claim step, so claims, crash suspects and retries are shared with C++ workers
  // of the same consumer). Runs in transactions of its own: TransactionError inside one. Returns
  // the claimed events as a JSON array, oldest first: [{"id", "seq", "topic", "payload" (the
  // JSON itself), "headers" (object), "key", "dedup_key", "not_before", "created_at" (ms since
  // the epoch, null when none), "attempt"}]. Throws NotFound for a consumer without
  // subscriptions, InvalidArgument for an ordered consumer (not supported from SQL).
  std::string claim(int limit);

  // Marks `event_id` of the claim handled inside the transaction the calling statement runs in:
  // the inbox row, the delivery state and the counters commit or roll back with the app's writes.
  // Throws NotFound if the event is not in this connection's claim, InvalidArgument if it was
  // finished already or is seen already (the app must roll back its writes).
  void done(const std::string& event_id);

  // Records a failed attempt of `event_id` of the claim inside the calling statement's
  // transaction: retried after the consumer's backoff, or dead-lettered when `permanent` or its
  // attempts are spent. Returns the delivery's state: "pending" (a retry) or "dead". Same errors
  // as done().
  std::string fail(const std::string& event_id, const std::string& error, bool permanent);

  // Gives back `event_id` of the claim inside the calling statement's transaction, spending no
  // attempt, and pauses the whole consumer for `delay` in every process (Outcome::kThrottle),
  // `reason` shown as the pause's note. The rest of the claim goes back at the next claim or
  // sluice_release. Returns "pending". Same errors as done().
  std::string throttle(const std::string& event_id, Duration delay, const std::string& reason);

  // Gives back what is left of the claim: pending again, no attempt spent. In a transaction of its
  // own. Returns how many events were given back.
  int release();

 private:
  // The item of the claim with `event_id`, checked unfinished in the file.
  const ClaimedItem& unfinished_item(const std::string& event_id, const char* operation);
  bool finished(const ClaimedItem& item);
  // Reads the consumer's row and subscriptions into spec_.
  void load_spec();
  // Throws InvalidArgument, for `operation`, unless this connection still holds its claim (it
  // may have been recovered meanwhile: claim_book.hpp).
  void check_held(const char* operation);
  // Moves the circuit breaker a C++ or C worker recorded for the consumer (none: nothing) by one
  // outcome, a success or a transient failure, in the calling transaction, as a worker's
  // commit of that outcome would.
  void tally_breaker(bool success, TimePoint now);
  // Ends the claim row once no item is left; in the calling transaction.
  void drop_claim_if_finished();
  void write_delivery(const ClaimedItem& item, const char* state, int attempts,
                      TimePoint next_attempt_at, const char* reason, const std::string& error,
                      std::optional<TimePoint> failed_at, TimePoint scheduled_at);

  SQLite::Database& db_;
  std::string name_;
  std::shared_ptr<Clock> clock_;
  ConsumerSpec spec_;
  std::optional<Options> options_;  // batch size and clock of deliverer_
  std::optional<Deliverer> deliverer_;
  std::optional<Claim> claim_;
};

}  // namespace sluice::sqlext
