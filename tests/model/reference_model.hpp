// The reference model: a small in-memory state machine of what sluice promises, per (event,
// consumer) pair. It is driven by the same operations as the engine and by the handler calls the
// engine makes, judges each call against the promises (order, not-before, attempts, no second
// delivery), and says what the engine's file must show afterwards.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "handler_script.hpp"
#include "sequence_config.hpp"
#include "sluice/event.hpp"
#include "violation.hpp"

namespace sluice::model {

// kRemoved: its consumer was removed (and perhaps added again without this event): the engine
// keeps nothing of it, and the app table keeps what it applied.
enum class PairState { kPending, kDead, kDelivered, kDiscarded, kRemoved };

// Why a pending pair is pending: named when it is found stranded.
enum class Cause {
  kFresh,
  kRetry,
  kSnooze,
  kReplayed,
  kBackfilled,
  kBackfilledInFlight,
  kHeldInBatch,
  kCrashed
};
const char* name(Cause cause);

// One (event, consumer) pair.
struct Pair {
  PairState state = PairState::kPending;
  int attempts = 0;  // spent since the last replay or backfill
  int snoozes = 0;   // since the last attempt
  int resets = 0;    // replays and backfills
  // A pending pair may run from `earliest` and must have run by `latest` (min: at once).
  TimePoint earliest = TimePoint::min();
  TimePoint latest = TimePoint::min();
  // When a retry's or snooze's wait began; a clock set back before it makes the wait start anew.
  std::optional<TimePoint> scheduled_at;
  Cause cause = Cause::kFresh;
  bool clock_back_while_pending = false;
  // Failed circuit-breaker probes since the last attempt: a probe spends no attempt, and the
  // handler's script moves on with each (the outage ends).
  int probes = 0;
  int delivered = 0;  // successful handler calls in all
  std::string dead_reason;
  std::string last_error;
};

struct ModelEvent {
  long long n = 0;  // the event's number, in its payload
  std::int64_t seq = 0;
  std::string id;
  std::string topic;
  std::string key;
  std::string dedup_key;
  TimePoint created_at;
  std::optional<TimePoint> not_before;
  bool pruned = false;
  std::map<std::string, Pair> pairs;  // by consumer, for every consumer of its topic
};

// A pending pair an instance could deliver, seen in seq order with per-key blocking applied.
struct DuePair {
  const ModelEvent* event;
  std::string consumer;
  const Pair* pair;
  bool may_run;   // earliest <= now
  bool must_run;  // latest <= now
};

// Not thread-safe: the caller serialises handler calls and operations.
class ReferenceModel {
 public:
  explicit ReferenceModel(const SequenceConfig& config);

  // An enqueue: the result the engine must return. A stored event's seq is only known to be
  // above every earlier one (seqs may have gaps), so it is 0 here, and its ID is the engine's
  // unless given; `stored` records both. A stored event joins the open transaction.
  EnqueueResult expect_enqueue(const NewEvent& event, long long n, TimePoint now);
  void stored(long long n, const std::string& id, std::int64_t seq);
  std::int64_t last_seq() const { return last_seq_; }
  void begin_transaction();
  void rollback_transaction();

  // Handler calls of `consumer` for events `ns` (one call of a batch handler, or a single event),
  // with the attempt the engine reported (0 if it reports none). Judges the calls, appends what
  // broke to `out`, and returns each event's scripted outcome, now applied to the model. An
  // in-transaction call names its delivery transaction's `connection` (else null): its success
  // stands only once that transaction commits (see delivery_transaction_ended).
  std::vector<Scripted> on_calls(const std::string& consumer, const std::vector<long long>& ns,
                                 int engine_attempt, bool batch, TimePoint now,
                                 std::vector<Violation>& out, const void* connection = nullptr);
  // The write transaction on `connection` committed or rolled back. The engine promises: a
  // handler call that succeeded in a transaction that rolled back did not happen (its writes
  // went with it; the event is called again, as the same attempt); one that failed stands (the
  // engine records its outcome when the step runs again, without a second call).
  void delivery_transaction_ended(const void* connection, bool committed);
  // The outcome the next call of (consumer, n) will get, without applying it.
  Scripted peek_outcome(const std::string& consumer, long long n) const;

  // A worker saw the clock behind its last reading (or started): as the engine promises, every
  // wait scheduled after `now` starts anew from `now`, firing at worst early.
  // Only the pairs of consumers in `of` (a worker re-anchors the consumers it delivers for; one
  // left with a removed consumer's handlers delivers nothing for its successor), or all if null.
  void clock_seen_behind(TimePoint now, const std::set<std::string>* of = nullptr);
  // A worker that may or may not have run a step (started, then stopped at once): each wait
  // scheduled after `now` may start anew from `now`, or keep its schedule.
  void clock_maybe_seen_behind(TimePoint now);

  // The clock moved forward by `step` during a handler call of a drain that began at `since`: the
  // engine may time a wait of that drain from either reading, so each may end `step` later.
  // With `recorded_late`, the engine may also have recorded a wait's start at the later reading.
  void clock_stepped_mid_drain(TimePoint since, Duration step, bool recorded_late = false);

  using DeadFilter =
      std::function<bool(const ModelEvent&, const std::string& consumer, const Pair&)>;
  long long replay(const DeadFilter& matches);
  long long discard(const DeadFilter& matches);
  // Backfill of `consumer` from seq `from_seq`; `in_flight` are the events of the handler call
  // that runs it, their outcomes already applied: each one delivered is owed one more delivery.
  long long backfill(const std::string& consumer, std::int64_t from_seq,
                     const std::set<long long>& in_flight);
  // The claim of `consumer` that held `ns` (and nothing else unfinished) was recovered as crashed
  // at about `now`: each spent an attempt, dead-lettered as "crashed" only if alone at its last.
  void crashed(const std::string& consumer, const std::vector<long long>& ns, TimePoint now);
  // `consumer` was removed and added again, from the oldest retained event or from now, with the
  // topics the configuration now gives it: every pair of its old self is gone; with `oldest`,
  // each retained event of its topics is pending anew.
  void add_again(const std::string& consumer, bool oldest);
  // The engine pruned `n`: judged against what prune may remove.
  void pruned(long long n, TimePoint cutoff, std::vector<Violation>& out);

  // The drain of a throttled call of `consumer` returned at `now`: the engine recorded the
  // throttle's end by then, `delay` after a clock reading no later than `now`.
  void throttle_recorded_by(const std::string& consumer, TimePoint now, Duration delay);
  // pause_consumer of `consumer` until `until` (max: until resumed).
  void paused(const std::string& consumer, TimePoint until);
  // resume_consumer of `consumer`.
  void resumed(const std::string& consumer);
  // A handler call of `consumer` for `ns` throttled for `delay` at `now`: judged as on_calls
  // judges a call; the events stay as they were (no attempt spent) and the consumer pauses until
  // `delay` after now, unless an operator's pause is in force. Returns the outcomes to act on.
  std::vector<Scripted> on_throttled_call(const std::string& consumer,
                                          const std::vector<long long>& ns, int engine_attempt,
                                          bool batch, TimePoint now, Duration delay,
                                          const std::string& reason, std::vector<Violation>& out);

  // Pending pairs `instance` handles and that nothing earlier of their key holds back, but none
  // of a consumer paused at `now`; a pair of a consumer whose pause may have ended (real time)
  // may run but need not.
  std::vector<DuePair> due(const InstanceConfig& instance, TimePoint now) const;

  const std::map<long long, ModelEvent>& events() const { return events_; }
  ModelEvent* find(long long n);

  struct Totals {
    long long delivered = 0;
    long long retries = 0;
    long long throttled = 0;  // events given back by a throttling handler call
  };
  // Whether `consumer` is paused at `now` (operator or throttle); on real time a throttle's end
  // is only known within slack_.
  bool paused_at(const std::string& consumer, TimePoint now) const;
  const std::map<std::string, Totals>& totals() const { return totals_; }

  // A consumer's circuit breaker as the engine promises to hold it (consumer.hpp, Breaker).
  struct BreakerModel {
    long long consecutive = 0;  // transient failures since the last success
    std::optional<TimePoint> open_until;
    Duration open_for{0};
    bool probe = false;  // a probe went through and its outcome keeps it half-open
    // "off" without a breaker, else "closed", "open" or "half-open", as ConsumerStats names them.
    std::string name(bool configured, TimePoint now) const;
  };
  // The breaker of `consumer` (closed if it never failed).
  BreakerModel breaker(const std::string& consumer) const;
  // How often a breaker opened or opened again.
  long long breaker_openings() const { return breaker_openings_; }

  // What a handler call of `consumer` for `ns` may change, taken before on_calls: restore() puts
  // it back for a call found never to count (a stalled worker's, whose claim was recovered from
  // under it: the engine records nothing of it).
  struct CallSnapshot {
    std::string consumer;
    std::vector<std::pair<long long, Pair>> pairs;
    Totals totals;
  };
  CallSnapshot snapshot(const std::string& consumer, const std::vector<long long>& ns) const;
  void restore(const CallSnapshot& snapshot);

 private:
  CallKey call_key(const std::string& consumer, const ModelEvent& event, const Pair& pair) const;
  // The scripted outcome of the next call of (consumer, event); no snooze for a consumer SQL
  // drives.
  Scripted outcome_of(const std::string& consumer, const ModelEvent& event) const;
  void apply(const ModelEvent& event, const std::string& consumer, Pair& pair,
             const Scripted& outcome, TimePoint now);
  // Whether an earlier event of `event`'s key is unfinished for an ordered `consumer`, leaving
  // out `except`.
  const ModelEvent* unfinished_before(const ModelEvent& event, const std::string& consumer,
                                      const std::set<long long>& except) const;

  // The breaker's judgement of a call of `consumer` for `count` events at `now`: none while open,
  // one (the probe) while half-open.
  void judge_breaker(const std::string& consumer, std::size_t count, TimePoint now,
                     std::vector<Violation>& out) const;
  // Whether a call of `consumer` at `now` is its breaker's half-open probe; if so, it is out for
  // another cool-down.
  bool take_probe(const std::string& consumer, TimePoint now);
  // The outcomes of one call (one delivery transaction) of `consumer` move its breaker: `success`
  // if one succeeded, `trailing` transient failures after the last success.
  void settle_breaker(const std::string& consumer, bool probe, bool success, long long trailing,
                      TimePoint now);

  // `consumer` paused (throttled, or its breaker opened) at `now` with a claim in hand: the
  // events of the claim not handed over go back due at once, whatever the clock reads after
  // (even set back below their retry's end). The model does not know which were claimed: any
  // due at `now` may run from then on.
  void release_claimed(const std::string& consumer, TimePoint now);

  // The judgement of on_calls for a call of `consumer` for `events`, appended to `out`.
  void judge_calls(const std::string& consumer, const std::vector<ModelEvent*>& events,
                   int engine_attempt, TimePoint now, std::vector<Violation>& out) const;
  // The events of `ns`, or none (a violation appended) if `consumer` does not take one of them.
  std::vector<ModelEvent*> called_events(const std::string& consumer,
                                         const std::vector<long long>& ns,
                                         std::vector<Violation>& out);

  const SequenceConfig& config_;
  // A consumer's pause: no call may come before `ends` (an operator's pause or a throttle), and
  // due work must run again by `ends` + slack_. An operator's pause is not shortened by a
  // throttle.
  struct Pause {
    TimePoint ends = TimePoint::max();
    // A throttle's end by the latest clock reading the engine may have made for it.
    TimePoint latest_end = TimePoint::max();
    bool by_operator = false;
  };
  std::map<std::string, Pause> pauses_;
  std::map<std::string, BreakerModel> breakers_;
  long long breaker_openings_ = 0;
  // On real time (a seam sequence) an engine may read its clock before or after the handler call
  // the model times a wait from: a wait may end this much before or after the model's reading +
  // its length.
  const Duration slack_;
  std::map<long long, ModelEvent> events_;  // by n: also seq order
  std::int64_t last_seq_ = 0;
  std::int64_t seq_at_begin_ = 0;
  std::vector<long long> tentative_;
  // Successes of in-transaction calls not yet committed, per connection: the pair as it was.
  struct Undo {
    long long n;
    std::string consumer;
    Pair before;
  };
  std::map<const void*, std::vector<Undo>> uncommitted_;
  std::map<std::string, Totals> totals_;
  // Where a subscription of a consumer added again starts (its topic's events after this seq);
  // none for one subscribed before any event.
  std::map<std::pair<std::string, std::string>, std::int64_t> start_seq_;
};

}  // namespace sluice::model
