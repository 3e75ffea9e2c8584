// What a handler does with an event: a deterministic function of (seed, consumer, event number,
// attempt), so the model knows every outcome without looking at the engine.
#pragma once

#include <cstdint>
#include <string>

#include "sluice/clock.hpp"

namespace sluice::model {

enum class Action {
  kOk,
  kRetry,            // ctx.retry / Outcome::retry
  kThrowAfterWrite,  // writes, then throws std::runtime_error: retried, the write rolled back
  kDeadLetter,       // ctx.dead_letter / Outcome::permanent
  kThrowPermanent,   // throws PermanentError
  kSnooze,           // ctx.snooze / Outcome::snooze
  // Throttled / ctx.throttle / Outcome::throttle for `snooze`: never scripted, the
  // kThrottleInFlight operation makes it. Writes nothing.
  kThrottle,
};

struct Scripted {
  Action action = Action::kOk;
  Duration snooze{0};
  // The error text the engine records for a failure.
  std::string error;
  // For a batch handler: it throws for the whole batch (every event retried).
  bool whole_batch = false;
  // Whether an in-transaction handler writes its application before it acts: a failing one that
  // wrote nothing needs nothing undone, one that wrote has its write rolled back.
  bool writes = true;
  bool fails() const {
    return action != Action::kOk && action != Action::kSnooze && action != Action::kThrottle;
  }
  bool permanent() const {
    return action == Action::kDeadLetter || action == Action::kThrowPermanent;
  }
};

// Which call of a handler: as the model counts them, so that it knows the outcome.
struct CallKey {
  std::string consumer;
  long long n = 0;  // the event's number (its payload)
  int attempt = 1;  // 1-based, reset by replay and backfill
  int snoozes =
      0;           // snoozes since the last attempt: a snooze is never answered by a snooze forever
  int resets = 0;  // replays and backfills of the pair, so a replayed event can now succeed
  int probes = 0;  // failed breaker probes since the last attempt, so an outage ends
};

Scripted scripted_outcome(std::uint64_t seed, const CallKey& call);

// Whether a batch handler call whose first event is `call` throws for the whole batch.
bool batch_throws(std::uint64_t seed, const CallKey& call);

}  // namespace sluice::model
