// Delivery of one consumer's events on one connection: claiming work durably before handlers run,
// running handlers, recording outcomes, and recovering claims whose process died.
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "breaker_state.hpp"
#include "claim_book.hpp"
#include "durable_claims.hpp"
#include "handler_context.hpp"
#include "handler_thread.hpp"
#include "sluice/consumer.hpp"
#include "sluice/options.hpp"
#include "sluice/outbox.hpp"
#include "sluice/tracer.hpp"
#include "write_transaction.hpp"

namespace sluice {

// A consumer as one worker knows it: its row in the file and the handlers registered here.
struct ConsumerSpec {
  std::int64_t id = 0;
  std::string name;
  ConsumerOptions options;
  RetryPolicy retry;
  std::map<std::string, Handler> handlers;
  // By topic. One handler may take several topics (Worker::subscribe_batch_topics): its
  // batches then span them.
  std::map<std::string, std::shared_ptr<const BatchHandler>> batch_handlers;
  // The clock's reading at this worker's last step; an earlier reading means it was set back.
  TimePoint latest_now = TimePoint::min();
  // The topics with a handler here as a JSON array, or empty when this process handles every
  // topic the consumer subscribes to in the file (the usual case: no filter). During a rolling
  // deploy an instance may lack a handler another instance has; it then claims only its own.
  std::string handled_topics;
  bool has_handler(const std::string& topic) const {
    return handlers.count(topic) + batch_handlers.count(topic) > 0;
  }
  // Set once the consumer's row is no longer in the file (removed, perhaps added again under a
  // new id): this worker delivers nothing more for it.
  bool gone = false;
  // Set for a consumer driven from SQL: the app may act outside the file on what it claims.
  bool sql_claimer = false;
  // Whether what it claims may leave the file before its outcome commits: its claims are then
  // made durable first (durable_claims.hpp).
  bool hands_out() const {
    return sql_claimer || options.mode == DeliveryMode::kOutsideTransaction;
  }
};

struct ClaimedItem {
  Event event;
  // The attempt this delivery is, already counted in the file.
  int attempt = 1;
  // Taken from the consumer's cursor (no sluice_deliveries row) rather than a pending row.
  bool fresh = true;
};

// Work a worker has durably claimed and not yet finished.
struct Claim {
  std::int64_t id = 0;
  std::vector<ClaimedItem> items;  // in seq order
  std::size_t next = 0;            // items before it are finished and committed
  // Keys of an ordered consumer whose earlier item in this claim failed or was held back: the
  // claim's later items of those keys are held back too, in whichever transaction they come.
  std::set<std::string> failed_keys;
  // The file's backfill count when the claim was made (see backfill.cpp): once it changes, a
  // backfill may have queued the claim's events again, and the unstarted rest is given back.
  std::int64_t backfills = 0;
  // Outcomes other than a plain success, by item index, from a step that was rolled back (see
  // handle_in_transaction): applied when the step runs again, without calling the handler a
  // second time. A success is not kept: its writes went with the rollback, so it runs again.
  std::map<std::size_t, Outcome> known_outcomes;
  // Outcomes of this step so far that known_outcomes keeps if the step is rolled back.
  std::map<std::size_t, Outcome> step_outcomes;
  // Set once a step of this claim was rolled back to undo a failed handler's writes: the rest
  // of the claim runs with a savepoint per event, so no handler runs a third time.
  bool savepoints = false;
  // The half-open breaker's probe (consumer.hpp, Breaker): one event, its failure spends no
  // attempt, and the breaker it opened again does not give it back.
  bool probe = false;
  bool done() const { return next >= items.size(); }
};

struct StepResult {
  bool progressed = false;  // claimed or finished something
  long long delivered = 0;
  long long retried = 0;
  long long snoozed = 0;
  long long throttled = 0;
  long long dead_lettered = 0;
  // The longest the step held the write lock at a stretch (a handler outside the transaction
  // does not count): what a writer of the app may have waited behind.
  std::chrono::steady_clock::duration held_write_lock{};
};

// Not thread-safe: bound to one connection, used by one thread at a time.
class Deliverer {
 public:
  // `kind` is what the file records for its worker (claim_book.hpp): "worker" or "sql".
  Deliverer(SQLite::Database& db, const Options& options, const char* kind = "worker");
  ~Deliverer();
  Deliverer(const Deliverer&) = delete;
  Deliverer& operator=(const Deliverer&) = delete;

  // One step for `spec`: with no claim in hand, claims work in a short transaction; with one,
  // delivers it (in-transaction consumers: one transaction within the time budget, which also
  // claims the next batch unless `stopping`). On an exception nothing of the step is kept and
  // the claim in hand is retried by the next step without spending attempts. A claim in hand
  // that is no longer this worker's (claim_book.hpp) is dropped with nothing of the step
  // committed; a consumer no longer in the file is marked spec.gone, and steps for it do nothing.
  StepResult step(ConsumerSpec& spec, std::optional<Claim>& in_hand, bool stopping);

  // Whether step() for `spec` with no claim in hand may do anything: false only when it would
  // return at once. Reads only, so a caller may ask for many consumers in one read transaction
  // (a statement outside one opens and ends one of its own, half its cost when there is no work).
  bool may_step(ConsumerSpec& spec);

  // Gives back the unfinished part of a claim: pending again, no attempt spent.
  void release(ConsumerSpec& spec, std::optional<Claim>& in_hand);

  // The owner recorded on this deliverer's claims (see process_identity.hpp).
  const std::string& owner() const { return claims_.owner(); }
  // This deliverer's claims and registration (claim_book.hpp).
  ClaimBook& claims() { return claims_; }

 private:
  // Logs that `spec` is no longer in the file and marks it gone.
  void consumer_gone(ConsumerSpec& spec, const ConsumerGone& gone);
  // step() without a claim in hand.
  StepResult claim_step(ConsumerSpec& spec, std::optional<Claim>& in_hand, bool stopping);
  // Whether a step would deliver, claim, recover or move anything, asked without a write
  // transaction: an idle worker must not write (an edge device's battery and flash).
  bool has_work(ConsumerSpec& spec, TimePoint now);
  // Whether a claim of another worker of `spec` may be taken over at `now` (see
  // claim_abandoned); with `live_ones`, whether any may not.
  bool foreign_claims(const ConsumerSpec& spec, TimePoint now, bool& live_ones);
  // Binds the due-row query's parameters for `spec`.
  void bind_due(SQLite::Statement& due, ConsumerSpec& spec, TimePoint now, int limit);
  // Refreshes spec.handled_topics against the consumer's subscriptions in the file.
  void refresh_topic_filter(ConsumerSpec& spec);
  // After the clock was set back past when retries were scheduled, makes them due at once: the
  // time their backoff already ran is unknown, so they fire at worst early, never an hour late.
  void reanchor_retries(const ConsumerSpec& spec, TimePoint now);
  // Begins a write transaction with the statements prepared for it, and forgets what the last
  // transaction had pending for the consumer's row.
  WriteTransaction begin_write();
  // Notes the consumer's new cursor for write_consumer_row.
  void write_cursor(std::int64_t cursor);
  // Writes the cursor and counters noted in this transaction, in one statement (each was one
  // of its own, on the same row). Called before every commit that may have noted any.
  void write_consumer_row(const ConsumerSpec& spec);
  // Claims due rows and fresh events; `moved` tells whether the cursor moved even when nothing
  // was left to claim (all held back, or of other topics): that is progress too. With
  // `finished_claim` (the ID of this worker's claim just finished in this transaction), its row
  // is renewed for the new claim rather than deleted and inserted again.
  std::optional<Claim> claim_into(ConsumerSpec& spec, TimePoint now, bool& moved,
                                  std::int64_t finished_claim = 0);
  // Adds up to `room` events past the consumer's `cursor` to the claim (holding back delayed,
  // key-blocked and unhandled ones, and reading on past them within the scan window), and notes
  // the cursor past what it read. Returns that new cursor (`cursor` when it did not move); the
  // caller moves the claim's end to it. `newest` (the newest seq) is read only when needed if
  // not given.
  std::int64_t claim_fresh(ConsumerSpec& spec, TimePoint now, std::int64_t cursor,
                           std::optional<std::int64_t> newest, int room, Claim& claim);
  // What a claim and has_work start from, in one statement (three before): the consumer's cursor,
  // the newest seq (unknown when claim_start knew the rest), and when its earliest pending row
  // is due (when none is due at `now`, the usual case, the claim's three queries for due rows are
  // skipped).
  struct ClaimStart {
    std::int64_t cursor = 0;
    std::optional<std::int64_t> newest;
    TimePoint next_due = TimePoint::max();  // max: no pending row
    // Until when the consumer is paused (pause.hpp): min when it is not, max until resumed.
    TimePoint held_until = TimePoint::min();
    // Until when its breaker is open (a probe may go once it passed); unset while closed.
    std::optional<TimePoint> breaker_until;
    bool due_at(TimePoint now) const { return next_due <= now; }
    // Paused, or its breaker open (which does not hold the breaker's own probe back).
    bool held_at(TimePoint now, bool probe = false) const {
      return held_until > now || (!probe && breaker_until && *breaker_until > now);
    }
    bool half_open_at(TimePoint now) const { return breaker_until && *breaker_until <= now; }
  };
  ClaimStart read_claim_start(const ConsumerSpec& spec);
  // The claim start of `spec` without a statement when this deliverer knows it: nothing has
  // committed to the file since its last delivery commit, which left the consumer's cursor and
  // pending rows as it noted them, and nothing of `spec` is due at `now`. Else read_claim_start.
  ClaimStart claim_start(const ConsumerSpec& spec, TimePoint now);
  // The file's data version (SQLITE_FCNTL_DATA_VERSION): unlike PRAGMA data_version it also
  // changes with this connection's own commits, so an unchanged value means nothing committed at
  // all. Empty if SQLite cannot tell.
  std::optional<unsigned int> data_version();
  // Whether nothing has committed since the commit that committed_ describes, asked once per
  // write transaction (no other connection can commit while it holds the lock).
  bool unchanged_since_commit();
  // SELECT max(seq), for a claim that started without it.
  std::int64_t newest_seq();
  // The first seq after `seq`; one must exist.
  std::int64_t next_seq_after(std::int64_t seq);
  // What the file held after this deliverer's last claiming commit (a step's claim, or
  // commit_step), for the transactions after it to use instead of reading it again while nothing
  // else commits (a batch of one spent an eighth of its instructions on these reads). Never
  // anything a transaction wrote before it committed: one rolled back leaves the file as this
  // describes it. A handler writing sluice's tables itself (not an API) would go unnoticed.
  struct Committed {
    unsigned int version = 0;  // data_version() after the commit
    std::optional<std::int64_t> backfills;
    std::int64_t consumer_id = 0;  // whose cursor and next due time follow; 0 if none
    std::int64_t cursor = 0;
    TimePoint next_due = TimePoint::max();
    TimePoint held_until = TimePoint::min();
    std::optional<TimePoint> breaker_until;
  };
  // What the file will hold once this transaction of `spec` commits (see committed_); called
  // before write_consumer_row, which forgets the cursor noted.
  Committed on_commit(const ConsumerSpec& spec) const;
  // Notes `after` as what the file holds after the commit just made.
  void note_committed(Committed after);
  // Whether `spec` is paused at `now` in this write transaction: by the file, or by a throttle
  // this transaction noted; or its breaker is open, by the file or by the failures this
  // transaction noted (not for its `probe`, which was let through).
  bool held_in_transaction(const ConsumerSpec& spec, const ClaimStart& at, TimePoint now,
                           bool probe = false) const;
  // Whether `spec` is paused (or its breaker open) at `now`, read outside a transaction.
  bool held_now(const ConsumerSpec& spec, TimePoint now, bool probe = false);
  // The breaker's tally of this transaction, its row read once; null without a breaker.
  BreakerTally* breaker_tally(const ConsumerSpec& spec);
  // Once the consumer is paused or its breaker open: gives back the claim's items from `next` on
  // (none has been handed to a handler), pending again with no attempt spent, and returns true.
  bool release_while_held(ConsumerSpec& spec, Claim& claim, TimePoint now);
  // Whether any delivery row of `spec` holds back later events of its key.
  bool any_key_held(const ConsumerSpec& spec);
  // Whether an earlier event of the item's key holds it back.
  bool key_blocked(const ConsumerSpec& spec, const ClaimedItem& item);
  // Tops up a claim in hand with fresh events to batch_size unfinished items.
  void extend_claim(ConsumerSpec& spec, Claim& claim, TimePoint now);
  void recover_abandoned(ConsumerSpec& spec, TimePoint now, StepResult& result);
  std::int64_t backfills();
  // backfills(), read once per write transaction: it cannot change while this one holds the lock.
  std::int64_t backfills_in_transaction();
  // When a backfill ran since the claim was made, gives back its items from `next` on (none has
  // started): pending again, no attempt spent, one row per event, so each is delivered once more
  // and in order, rather than once by this claim and once by the backfill.
  void release_after_backfill(ConsumerSpec& spec, Claim& claim);
  // Appends the due rows it claims to `items`.
  void claim_due(ConsumerSpec& spec, TimePoint now, std::int64_t claim_id, bool suspects_only,
                 int limit, std::vector<ClaimedItem>& items);
  StepResult deliver_in_transaction(ConsumerSpec& spec, std::optional<Claim>& in_hand,
                                    bool stopping);
  StepResult deliver_outside(ConsumerSpec& spec, std::optional<Claim>& in_hand, bool stopping);
  // Handles the claim's item at claim.next, without a savepoint unless claim.savepoints (and
  // then not for the first of a step, `first`). A handler that fails after writing with no
  // savepoint to undo it throws StepRolledBack: the step runs again with the outcomes known.
  void handle_in_transaction(ConsumerSpec& spec, Claim& claim, bool first, TimePoint now,
                             StepResult& result);
  // Whether the handler just called may have written in the file: sqlite3_total_changes moved
  // from `changes_before`, it prepared a statement whose writes that count misses, or it left a
  // writing statement unfinished (an INSERT ... RETURNING not stepped to its end).
  bool handler_may_have_written(int changes_before) const;
  // What one handler call of an outside consumer gets and returns: a batch handler's run of
  // items of its topics, or one item for a plain handler. It holds the items' events, moved out of
  // the claim until return_events (copying each event cost a good part of a relay's time), so
  // that the call can run on another thread while the claim grows.
  struct OutsideGroup {
    std::size_t start = 0;  // claim items [start, end)
    std::size_t end = 0;
    const BatchHandler* batch_handler = nullptr;
    const Handler* handler = nullptr;
    std::string consumer;
    int attempt = 1;
    // Options::tracer (owned by options_, which outlives every group): run_outside may run on
    // another thread, which has no access to options_.
    Tracer* tracer = nullptr;
    std::vector<Event> batch;  // the items handed to the handler
    std::vector<std::size_t> batch_index;
    std::vector<Outcome> outcomes;  // one per item; done for an item seen already
    // Per item, the reason it is held back instead of its outcome applied ("blocked" behind a
    // failed item of its key, "unhandled" here), or null.
    std::vector<const char*> held;
  };
  // On the worker's thread: picks the group starting at `start` and moves the events it hands
  // over out of the claim.
  OutsideGroup prepare_outside(ConsumerSpec& spec, Claim& claim, std::size_t start);
  // Once the group's handler returned: holds back each item after a failed one of its key (an
  // ordered consumer's key completes in order, within a batch too) and notes the failed keys.
  static void hold_after_failures(const ConsumerSpec& spec, const Claim& claim, OutsideGroup& group,
                                  std::set<std::string>& failed_keys);
  // Moves the group's events back into the claim, once its handler has returned.
  static void return_events(OutsideGroup& group, Claim& claim);
  // Runs the group's handler; touches nothing but the group, so any thread may.
  static void run_outside(OutsideGroup& group);
  void apply_outcome(ConsumerSpec& spec, const ClaimedItem& item, const Outcome& outcome,
                     TimePoint now, StepResult& result);
  // Records the step's progress on the claim and the counters, claims the next batch when this
  // one is done (unless stopping), and commits. Returns the next claim.
  std::optional<Claim> commit_step(WriteTransaction& tx, ConsumerSpec& spec, Claim& claim,
                                   std::size_t start, bool stopping, TimePoint now,
                                   StepResult& result);

  void delivered(ConsumerSpec& spec, const ClaimedItem& item, TimePoint now, StepResult& result);
  // Records an outcome other than done: snoozed, retried or dead-lettered. The caller notes
  // the item's key as failed, for the rest of the claim.
  void record_failure(ConsumerSpec& spec, const ClaimedItem& item, const Outcome& outcome,
                      TimePoint now, StepResult& result);
  // Records that the claim holding the event died with it, among `company` events in all.
  void record_crash(ConsumerSpec& spec, const Event& event, int attempt, std::size_t company,
                    const std::string& error, TimePoint now, StepResult& result);
  // Leaves an item pending without spending its attempt: "blocked" behind its key, "unhandled"
  // here, or "released" on stop.
  void hold_back(ConsumerSpec& spec, const ClaimedItem& item, const char* reason);
  // Leaves a delayed item pending until its not-before time.
  void hold_until(ConsumerSpec& spec, const ClaimedItem& item, TimePoint not_before);
  // Notes the step's counts for write_consumer_row.
  void add_counters(const StepResult& result);
  // Ends a delivery row: its history goes to sluice_attempts with the outcome that ended it.
  void settle_delivery(std::int64_t consumer_id, const ClaimedItem& item, TimePoint now,
                       const char* outcome);
  bool mark_seen(std::int64_t consumer_id, const std::string& event_id, TimePoint now);
  // Marks fresh events seen, many to a statement, and counts the new marks as delivered.
  void mark_fresh_seen(const ConsumerSpec& spec, const std::vector<const std::string*>& event_ids,
                       TimePoint now, StepResult& result);
  bool seen(std::int64_t consumer_id, const std::string& event_id);
  // Upserts the (event, consumer) row; a failure (`failed_at` set) is added to its history.
  // `scheduled_at` is when a backoff started, `suspect` the size of the crash suspects' group it
  // is claimed in, 0 if none (see schema.cpp). The failure is logged as attempt
  // `logged_attempt`, or `attempts` when 0.
  // While defer_rows_, the row is kept for write_deferred_rows instead.
  void write_delivery(std::int64_t consumer_id, const Event& event, const char* state, int attempts,
                      TimePoint next_attempt_at, int suspect, const char* reason,
                      const std::string& error, std::optional<TimePoint> failed_at,
                      TimePoint scheduled_at, int logged_attempt = 0);
  // What write_delivery binds, kept while the step runs. `key` points into the claim's item.
  struct DeliveryRow {
    std::int64_t consumer_id = 0;
    std::int64_t seq = 0;
    const char* state = nullptr;
    const std::string* key = nullptr;
    int attempts = 0;
    std::int64_t next_attempt_at = 0;
    int suspect = 0;
    const char* reason = nullptr;
    std::string error;
    std::optional<std::int64_t> failed_at;
    std::string history;  // the failure's log entry, when failed_at
    std::int64_t scheduled_at = 0;
  };
  static void bind_delivery_row(SQLite::Statement& s, int base, const DeliveryRow& row);
  // Writes the rows kept since defer_rows_ was set, many to a statement, and stops keeping them.
  void write_deferred_rows();
  void log(LogLevel level, const char* message, const ConsumerSpec& spec, const Event& event,
           int attempt, const std::string& error, TimePoint now);
  // Keeps a finished claim's item buffer for the next claim: a new one each time cost a large
  // allocation and its free, which make malloc consolidate its free lists.
  void recycle(Claim& finished);
  Outbox& outbox();

  SQLite::Database& db_;
  Options options_;
  std::shared_ptr<Clock> clock_;
  ClaimBook claims_;
  TransactionControlGuard guard_;
  DurableClaims durable_claims_;
  std::unique_ptr<Outbox> outbox_;
  // Where a batch handler runs while the batch before commits.
  HandlerThread handler_thread_;
  std::vector<ClaimedItem> spare_items_;  // empty, kept for its capacity
  // Delivery rows an in-transaction step records, written when it commits (write_deferred_rows).
  bool defer_rows_ = false;
  std::vector<DeliveryRow> deferred_rows_;  // the first deferred_count_; the rest kept for reuse
  std::size_t deferred_count_ = 0;
  DeliveryRow single_row_;  // write_delivery's row when not deferred, kept for its buffers
  // The IDs of an outside step's delivered fresh items; kept for its capacity.
  std::vector<const std::string*> fresh_done_;
  // What this write transaction has to write to the consumer's row (write_consumer_row).
  struct ConsumerRowChange {
    long long delivered = 0;
    long long retried = 0;
    long long snoozed = 0;
    std::optional<std::int64_t> cursor;
    // A handler's throttle (Outcome::kThrottle): how many, and the latest end asked for.
    long long throttled = 0;
    std::optional<TimePoint> throttle_until;
    std::string throttle_reason;
    // The breaker's part (consumers with one), and whether a probe was claimed.
    BreakerTally breaker;
    bool probe_claimed = false;
  };
  ConsumerRowChange row_change_;
  std::optional<std::int64_t> backfills_in_transaction_;
  // The earliest next attempt of the pending rows this transaction wrote (max if none).
  TimePoint pending_due_in_transaction_ = TimePoint::max();
  // The claim start this transaction read or knew, for committed_.
  std::optional<std::pair<std::int64_t, ClaimStart>> start_in_transaction_;
  std::optional<bool> unchanged_in_transaction_;  // unchanged_since_commit(), once asked
  std::optional<Committed> committed_;

  SQLite::Statement begin_;
  SQLite::Statement commit_;
  SQLite::Statement update_consumer_;
  SQLite::Statement throttle_consumer_;
  SQLite::Statement unhandled_in_range_;
  SQLite::Statement claimed_rows_;
  SQLite::Statement due_rows_;
  SQLite::Statement due_suspects_;
  SQLite::Statement mark_claimed_;
  SQLite::Statement fresh_events_;
  SQLite::Statement any_key_held_;
  SQLite::Statement key_blocked_;
  SQLite::Statement write_delivery_;
  SQLite::Statement write_deliveries_;  // kDeliveryRowsPerInsert rows
  SQLite::Statement settle_delivery_;
  SQLite::Statement delete_delivery_;
  SQLite::Statement insert_inbox_;
  SQLite::Statement insert_inbox_many_;
  SQLite::Statement find_inbox_;
  SQLite::Statement claim_start_;
  SQLite::Statement newest_seq_;
  SQLite::Statement reanchor_needed_;
  SQLite::Statement reanchor_retries_;
  SQLite::Statement subscription_count_;
  SQLite::Statement forget_seen_;
  SQLite::Statement backfills_;
  SQLite::Statement savepoint_;
  SQLite::Statement release_savepoint_;
  SQLite::Statement rollback_savepoint_;
};

}  // namespace sluice
