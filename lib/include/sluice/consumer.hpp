// Consumers: named readers of topics, each with its own delivery state per event.
#pragma once

#include <SQLiteCpp/Database.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sluice/event.hpp"
#include "sluice/retry_policy.hpp"

namespace sluice {

enum class DeliveryMode {
  // The handler runs inside the delivery transaction: its writes, the inbox row and the delivery
  // state commit together. Effect exactly once. Handlers must be quick.
  kInTransaction,
  // The handler runs with no lock held; the delivery is marked done in a short transaction after
  // it returns. Effect at least once: pass event.id downstream as the idempotency key.
  kOutsideTransaction,
};

enum class StartFrom {
  // A consumer registered after events were enqueued receives only later events.
  kNow,
  // It receives every event still retained in the file.
  kOldest,
};

// A circuit breaker (ConsumerOptions::breaker): after `failures` consecutive transient failures of
// a consumer's handler calls (ctx.retry and exceptions; not PermanentError, dead_letter, snooze
// or throttle), in any of its processes, the consumer opens: no worker claims its events for
// `cool_down`. It then lets one event through, its oldest due one (half-open): a success closes
// it, a failure opens it again for twice the last cool-down, at most `max_cool_down`. A probe
// that fails is recorded in its attempt log but spends no attempt, and events never handed to a
// handler while open spend none either: an outage of any length dead-letters nothing. Its state
// is in the file, shared by every process of the consumer.
struct Breaker {
  // Consecutive transient failures that open it. Must be >= 1.
  int failures = 5;
  // How long it stays open after it first opens. Must be > 0.
  Duration cool_down = std::chrono::seconds(30);
  // The longest cool-down doubling reaches. Must be >= cool_down.
  Duration max_cool_down = std::chrono::minutes(10);

  // Throws InvalidArgument naming the field out of range.
  void validate() const;
};

struct ConsumerOptions {
  DeliveryMode mode = DeliveryMode::kInTransaction;
  // Handle events with equal keys in enqueue order. An event waiting for its retry holds back
  // later events of its key only; a dead-lettered event parks its key until it is replayed or
  // discarded.
  bool ordered = false;
  StartFrom start_from = StartFrom::kNow;
  // Overrides Options::retry for this consumer.
  std::optional<RetryPolicy> retry;
  // A circuit breaker; unset (the default): none. Recorded in the file with the consumer's other
  // options: every subscription of the consumer asks for the same one.
  std::optional<Breaker> breaker;
};

// What became of one handled event: what a BatchHandler returns per event, and what a Handler
// asks for through its Context.
struct Outcome {
  // kThrottle: the downstream throttles or is down. The event goes back to pending without
  // spending an attempt and the whole consumer pauses for `delay` in every process; the events
  // of its claim not yet handed to a handler go back with it, uncalled.
  enum class Kind { kDone, kRetry, kPermanent, kSnooze, kThrottle };
  Kind kind = Kind::kDone;
  // Error text recorded for kRetry and kPermanent; the reason for kThrottle.
  std::string error;
  // For kSnooze: when to try again. Snoozing spends no attempt. For kThrottle: how long the
  // consumer pauses.
  Duration delay{0};

  static Outcome done() { return {}; }
  static Outcome retry(std::string error) { return {Kind::kRetry, std::move(error), {}}; }
  static Outcome permanent(std::string error) { return {Kind::kPermanent, std::move(error), {}}; }
  static Outcome snooze(Duration delay) { return {Kind::kSnooze, {}, delay}; }
  static Outcome throttle(Duration delay, std::string reason = {}) {
    return {Kind::kThrottle, std::move(reason), delay};
  }
};

// Not thread-safe: valid only during the handler call it is passed to.
class Context {
 public:
  virtual ~Context() = default;
  virtual const std::string& consumer() const = 0;
  // 1 for the first attempt.
  virtual int attempt() const = 0;
  // The connection whose transaction is open for this delivery. Throws TransactionError for an
  // outside-transaction consumer. Committing or rolling back on it raises TransactionError.
  virtual SQLite::Database& db() = 0;
  // Enqueues an event in the delivery transaction (in-transaction consumers only).
  virtual EnqueueResult enqueue(const NewEvent& event) = 0;
  // Asks to be called again after `delay` without spending an attempt. The handler's writes
  // are rolled back.
  virtual void snooze(Duration delay) = 0;
  // Fails this attempt as throwing would, without the cost of an exception: retried by the
  // consumer's policy (dead-lettered as `exhausted` after its last attempt), `error` recorded.
  // The handler's writes are rolled back.
  virtual void retry(std::string error) = 0;
  // Dead-letters the event at once as `permanent`, as throwing PermanentError would, with
  // `error` recorded. The handler's writes are rolled back.
  virtual void dead_letter(std::string error) = 0;
  // Says the downstream throttles this handler or is down, as throwing Throttled would: the
  // event goes back without spending an attempt and the whole consumer pauses for `delay` in
  // every process, `reason` shown as the pause's note. The handler's writes are rolled back.
  virtual void throttle(Duration delay, std::string reason = {}) = 0;
};

// Returns normally: delivered, unless it called snooze, retry, dead_letter or throttle on its
// Context (the last such call decides). Throws PermanentError: dead-lettered at once. Throws
// Throttled: as Context::throttle. Throws anything else:
// retried by the consumer's policy. An in-transaction handler's call counts only if its
// transaction commits: when it rolls back (the process died, the storage failed, or a later
// handler of the batch failed after writing), a call that had succeeded is made again, as the
// same attempt; a failure is recorded without a second call. Its writes through ctx.db() apply
// once either way; make effects outside the file idempotent.
using Handler = std::function<void(const Event&, Context&)>;

// For outside-transaction consumers that handle a batch at once (e.g. a broker publish with
// many acknowledgements outstanding). Returns one Outcome per event, in the same order.
// Throwing counts as kRetry for every event of the batch. Gets up to Options::batch_size / 2
// events. It may be called on a thread of the worker's other than the one that calls plain
// handlers (so that the next batch runs while the last one commits), never twice at once.
using BatchHandler = std::function<std::vector<Outcome>(const std::vector<Event>& events)>;

}  // namespace sluice
