// The operations a model sequence applies to the engine and the model alike. Each is plain data
// generated from the seed alone, and resolved against the model's state only when it runs, so a
// sequence with some operations removed still runs (that is how a failure is shrunk).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sluice/clock.hpp"

namespace sluice::model {

struct EventSpec {
  int topic = 0;
  int key = -1;    // -1: unkeyed
  int id = -1;     // -1: generated; else "id-<id>", reused across events
  int dedup = -1;  // -1: none; else "d-<dedup>"
  Duration delay{0};
};

enum class OpKind {
  kEnqueue,            // events in one transaction, committed
  kEnqueueBatch,       // Outbox::enqueue_batch, committed
  kEnqueueRolledBack,  // enqueued, then the transaction rolls back
  kEnqueueBadBatch,    // enqueue_batch with one malformed payload: nothing is written
  kDrain,              // run_until_idle() on one instance
  kClockForward,
  kClockBack,
  kReplay,            // replay_dead_letters with a filter chosen by `pick`
  kDiscard,           // discard_dead_letters
  kBackfill,          // backfill one consumer from a retained event chosen by `pick`
  kBackfillInFlight,  // backfill from inside the next outside handler call that succeeds
  kReplayInFlight,    // replay every dead letter from inside the next outside handler call
  kPrune,             // prune, forced, with a retention chosen by `pick`
  kRestartWorker,     // a new Worker on a new connection replaces one instance
  // A Worker on a connection of its own, started and stopped at once: how much it delivers
  // depends on timing; what it leaves must hold all the same.
  kStartStop,
  // Seam sequences only (sequence_config.hpp). An SQL consumer claims, settles a few of its
  // events and closes its connection with the rest claimed; then instance 0 drains, and must
  // recover that claim as crashed.
  kSqlCloseMidClaim,
  // Seam sequences only: an SQL consumer claims, settles a few and gives the rest back with
  // sluice_release (no attempt spent).
  kSqlRelease,
  // remove_consumer (forced) of consumer `consumer`, then subscribed again under its name, with
  // topics and StartFrom chosen by `pick`.
  kRemoveReadd,
  // --threaded only (a thread holds the lock). In the next outside handler call of a drain of
  // instance 0, which holds its claim: a foreign connection takes the write lock (BEGIN
  // IMMEDIATE) and keeps it 300 ms, the clock moves past claim_lease, and a second worker drains
  // meanwhile (waiting for the lock): it must not take over the live worker's claim.
  kForeignLockInFlight,
  // Seam sequences only: from inside a handler call of the C API worker's run_until_idle,
  // another thread calls sluice_worker_start on it: refused (SLUICE_INVALID), the drain goes on.
  kCStartInFlight,
  // Stall sequences only (a lease fallback on the manual clock, sequence_config.hpp). In the next
  // outside handler call of a drain of instance 0: the worker stalls there (a suspended laptop, a
  // debugger) while the clock moves past claim_lease, and a worker of another process, one that
  // cannot look it up (pid 1 of a PID namespace of its own), recovers its claim as crashed. Then
  // the call returns: the stalled worker must not commit anything for the claim it lost.
  kStallInFlight,
  // pause_consumer of consumer `consumer`, until resumed or (by `pick`) for `step`.
  kPause,
  // resume_consumer of consumer `consumer`.
  kResume,
  // A drain of instance `instance` whose first handler call on the drain's thread throttles
  // (Throttled, ctx.throttle, Outcome::throttle, SLUICE_THROTTLE or sluice_throttle) for `step`:
  // its events go back with no attempt spent and its consumer pauses for `step`.
  kThrottleInFlight,
};

struct Operation {
  OpKind kind = OpKind::kDrain;
  std::vector<EventSpec> events;
  int instance = 0;
  int consumer = 0;
  Duration step{0};
  std::uint64_t pick = 0;
};

// `count` operations for a sequence of `seed` with `instances` worker instances and `consumers`
// consumers. kStartStop only if `threaded`: a sequence with it is not reproducible from its
// seed alone. The seam operations only if `seams`, kStallInFlight only if `stalls`.
std::vector<Operation> generate_operations(std::uint64_t seed, int count, int instances,
                                           int consumers, bool threaded, bool seams,
                                           bool stalls = false);

// The operation's name, e.g. "enqueue".
const char* kind_name(OpKind kind);

// One line, e.g. "enqueue [t1 k2 id-3 +5000ms]".
std::string describe(const Operation& op);

}  // namespace sluice::model
