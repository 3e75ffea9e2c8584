#include "deliverer.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>

#include "attempt_log.hpp"
#include "attempt_trace.hpp"
#include "bind_text.hpp"
#include "crash_point.hpp"
#include "event_codec.hpp"
#include "json_string.hpp"
#include "log_to.hpp"
#include "rewind.hpp"
#include "saturating_time.hpp"
#include "schema.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "throttle_sql.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// Whether `outcomes` end in transient failures (a retry after the last success, whatever
// permanent failures, snoozes or events `held` back follow it): committed, they may open the
// breaker, so nothing more of the claim may go out before they are.
bool ends_in_failures(const std::vector<Outcome>& outcomes, const std::vector<const char*>& held) {
  for (std::size_t i = outcomes.size(); i-- > 0;) {
    if (held[i] != nullptr) continue;  // held back: its outcome is not recorded
    if (outcomes[i].kind == Outcome::Kind::kDone) return false;
    if (outcomes[i].kind == Outcome::Kind::kRetry) return true;
  }
  return false;
}

// The newest event among a claim's items from `from` on; 0 when there are none.
std::int64_t newest_claimed_seq(const Claim& claim, std::size_t from) {
  std::int64_t newest = 0;
  for (std::size_t i = from; i < claim.items.size(); ++i) {
    newest = std::max<std::int64_t>(newest, claim.items[i].event.seq);
  }
  return newest;
}

// Consumers read at most this many events past their cursor per claim, so a consumer of a rare
// topic never holds the write lock for a long scan.
constexpr std::int64_t kScanWindow = 16384;

// An outside consumer whose batches keep coming goes on extending its claim for at most this long
// in one step; then the claim finishes, and the worker's loop runs (stop, other consumers, and
// due retries, which only a new claim takes).
constexpr auto kRollingClaimLimit = std::chrono::seconds(1);

// Thrown when a handler of an in-transaction step failed after writing with no savepoint to undo
// its writes: the step's transaction is rolled back and the step runs again (see
// handle_in_transaction).
struct StepRolledBack {};

// Every state but 'discarded' holds back later events of its key. Not an IN list: SQLite builds
// a temporary b-tree for an IN list of more than two values on every run of the statement.
const char* const kBlocking = "b.state <> 'discarded'";

std::string event_query(const std::string& tail) {
  return std::string("SELECT ") + kEventColumns + tail;
}

// Due pending rows of consumer ?1 at time ?2 through `index`, oldest due first, at most ?4; with
// ?3 = 1 (an ordered consumer) none that an earlier event of its key holds back; with ?5 a JSON
// array of topics, only rows of those (the topics this process has a handler for).
std::string due_query(const std::string& index, const std::string& condition) {
  return event_query(
      ", d.attempts, d.reason, d.suspect FROM sluice_deliveries d INDEXED BY " + index +
      " JOIN sluice_events e ON e.seq = d.event_seq WHERE d.consumer_id = ?1 AND " + condition +
      "d.state = 'pending' AND d.next_attempt_at <= ?2 AND (?5 IS NULL OR e.topic "
      "IN (SELECT value FROM json_each(?5))) AND (?3 = 0 OR d.key IS "
      "NULL OR NOT EXISTS (SELECT 1 FROM sluice_deliveries b INDEXED BY "
      "sluice_deliveries_key WHERE b.consumer_id = d.consumer_id AND b.key = d.key "
      "AND b.event_seq < d.event_seq AND " +
      std::string(kBlocking) + ")) ORDER BY d.next_attempt_at LIMIT ?4");
}

// An outside consumer marks a batch's delivered fresh events seen this many to a statement: one
// statement per mark cost as much again as the row it wrote.
constexpr std::size_t kSeenMarksPerInsert = 32;

// ?1 consumer, ?2 delivered at, ?3... the event IDs.
std::string insert_seen_marks_sql() {
  std::string sql = "INSERT INTO sluice_inbox (consumer_id, event_id, delivered_at) VALUES ";
  for (std::size_t r = 0; r < kSeenMarksPerInsert; ++r)
    sql += (r == 0 ? "(?1, ?" : ", (?1, ?") + std::to_string(r + 3) + ", ?2)";
  return sql + " ON CONFLICT DO NOTHING";
}

// The delivery rows an in-transaction step records are written this many to a statement when it
// commits: one statement per row cost a failure about a third again of the row it wrote.
constexpr std::size_t kDeliveryRowsPerInsert = 16;
constexpr int kDeliveryRowParams = 13;

// Upserts `rows` (event, consumer) rows; row r's parameters are ?(13r+1) to ?(13r+13), in
// Deliverer::bind_delivery_row's order. A failure's log of one entry (else NULL) is appended to
// the row's history.
std::string write_delivery_sql(std::size_t rows) {
  std::string sql =
      "INSERT INTO sluice_deliveries (consumer_id, event_seq, state, key, attempts, "
      "next_attempt_at, claim_id, suspect, reason, last_error, first_failed_at, last_failed_at, "
      "scheduled_at, history) VALUES ";
  for (std::size_t r = 0; r < rows; ++r) {
    const auto p = [r](int i) {
      return "?" + std::to_string(static_cast<int>(r) * kDeliveryRowParams + i);
    };
    sql += (r == 0 ? "(" : ", (") + p(1) + ", " + p(2) + ", " + p(3) + ", " + p(4) + ", " + p(5) +
           ", " + p(6) + ", " + p(7) + ", " + p(8) + ", " + p(9) + ", " + p(10) + ", " + p(11) +
           ", " + p(11) + ", " + p(12) + ", " + p(13) + ")";
  }
  return sql +
         " ON CONFLICT (consumer_id, event_seq) DO UPDATE SET state = excluded.state, "
         "attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at, "
         "scheduled_at = excluded.scheduled_at, "
         "claim_id = excluded.claim_id, suspect = excluded.suspect, reason = excluded.reason, "
         "last_error = coalesce(excluded.last_error, last_error), "
         "first_failed_at = coalesce(first_failed_at, excluded.first_failed_at), "
         "last_failed_at = coalesce(excluded.last_failed_at, last_failed_at), "
         "history = CASE WHEN excluded.history IS NULL THEN history WHEN history IS NULL THEN "
         "excluded.history ELSE json_insert(history, '$[#]', json_extract(excluded.history, "
         "'$[0]')) END";
}

}  // namespace

Deliverer::Deliverer(SQLite::Database& db, const Options& options, const char* kind)
    : db_(db),
      options_(options),
      clock_(options.clock ? options.clock : system_clock()),
      claims_(db, options_, kind),
      guard_(db),
      // An SQL claimer's connection is the app's; the worker's and the relay's are their own.
      durable_claims_(db, std::strcmp(kind, "sql") == 0 ? DurableClaims::Connection::kShared
                                                        : DurableClaims::Connection::kEngineOwned),
      begin_(db, "BEGIN IMMEDIATE"),
      commit_(db, "COMMIT"),
      update_consumer_(db,
                       "UPDATE sluice_consumers SET cursor = coalesce(?5, cursor), "
                       "delivered_total = delivered_total + ?2, retries_total = retries_total + "
                       "?3, snoozed_total = snoozed_total + ?4 WHERE id = ?1"),
      throttle_consumer_(db, kThrottleConsumerSql),
      unhandled_in_range_(
          db, event_query(" FROM sluice_events e CROSS JOIN sluice_subscriptions s "
                          "WHERE e.seq > ?1 AND e.seq <= ?2 AND s.consumer_id = ?3 "
                          "AND s.topic = e.topic AND e.seq > s.start_seq "
                          "AND NOT EXISTS (SELECT 1 FROM sluice_inbox i WHERE i.consumer_id = ?3 "
                          "AND i.event_id = e.id) "
                          "AND NOT EXISTS (SELECT 1 FROM sluice_deliveries d WHERE "
                          "d.consumer_id = ?3 AND d.event_seq = e.seq) ORDER BY e.seq")),
      claimed_rows_(db, event_query(", d.attempts FROM sluice_deliveries d JOIN sluice_events e "
                                    "ON e.seq = d.event_seq WHERE d.consumer_id = ?1 AND "
                                    "d.claim_id = ?2 AND d.state = 'claimed' ORDER BY e.seq")),
      due_rows_(db, due_query("sluice_deliveries_due", "")),
      due_suspects_(db, due_query("sluice_deliveries_suspect", "d.suspect > 0 AND ")),
      mark_claimed_(db,
                    "UPDATE sluice_deliveries SET state = 'claimed', attempts = attempts + 1, "
                    "claim_id = ?3 WHERE consumer_id = ?1 AND event_seq = ?2"),
      fresh_events_(db, event_query(" FROM sluice_events e CROSS JOIN sluice_subscriptions s "
                                    "WHERE e.seq > ?1 AND e.seq <= ?2 AND s.consumer_id = ?3 AND "
                                    "s.topic = e.topic AND e.seq > s.start_seq "
                                    "ORDER BY e.seq LIMIT ?4")),
      any_key_held_(db,
                    "SELECT 1 FROM sluice_deliveries b INDEXED BY sluice_deliveries_key WHERE "
                    "b.consumer_id = ? AND b.key IS NOT NULL AND " +
                        std::string(kBlocking) + " LIMIT 1"),
      key_blocked_(db,
                   "SELECT 1 FROM sluice_deliveries b INDEXED BY sluice_deliveries_key WHERE "
                   "b.consumer_id = ? AND b.key = ? AND b.event_seq < ? AND " +
                       std::string(kBlocking) + " LIMIT 1"),
      write_delivery_(db, write_delivery_sql(1)),
      write_deliveries_(db, write_delivery_sql(kDeliveryRowsPerInsert)),
      settle_delivery_(db,
                       "INSERT INTO sluice_attempts (consumer_id, event_seq, attempt, at, outcome, "
                       "earlier) SELECT ?1, ?2, ?3, ?4, ?5, history FROM sluice_deliveries "
                       "WHERE consumer_id = ?1 AND event_seq = ?2"),
      // Only a row still claimed: a backfill may have queued the event again meanwhile.
      delete_delivery_(db,
                       "DELETE FROM sluice_deliveries WHERE consumer_id = ? AND event_seq = ? "
                       "AND state = 'claimed'"),
      insert_inbox_(db,
                    "INSERT INTO sluice_inbox (consumer_id, event_id, delivered_at) "
                    "VALUES (?, ?, ?) ON CONFLICT DO NOTHING"),
      insert_inbox_many_(db, insert_seen_marks_sql()),
      find_inbox_(db, "SELECT 1 FROM sluice_inbox WHERE consumer_id = ? AND event_id = ?"),
      claim_start_(db,
                   "SELECT c.cursor, (SELECT coalesce(max(seq), 0) FROM sluice_events), (SELECT "
                   "min(next_attempt_at) FROM sluice_deliveries INDEXED BY sluice_deliveries_due "
                   "WHERE consumer_id = ?1 AND state = 'pending'), c.paused_at, c.paused_until, "
                   "c.breaker_open_until FROM sluice_consumers c WHERE c.id = ?1"),
      newest_seq_(db, "SELECT coalesce(max(seq), 0) FROM sluice_events"),
      // A row scheduled after ?2 is due no earlier than it was scheduled, so only the due index's
      // range of rows due after ?2 is read.
      reanchor_needed_(db,
                       "SELECT 1 FROM sluice_deliveries INDEXED BY sluice_deliveries_due "
                       "WHERE consumer_id = ?1 AND state = 'pending' AND next_attempt_at > ?2 "
                       "AND scheduled_at > ?2 LIMIT 1"),
      // Never before the event's own not-before time, which is absolute.
      reanchor_retries_(db,
                        "UPDATE sluice_deliveries INDEXED BY sluice_deliveries_due "
                        "SET next_attempt_at = max(?2, coalesce((SELECT e.not_before FROM "
                        "sluice_events e WHERE e.seq = event_seq), 0)), scheduled_at = ?2 "
                        "WHERE consumer_id = ?1 AND state = 'pending' AND next_attempt_at > ?2 AND "
                        "scheduled_at > ?2"),
      subscription_count_(db, "SELECT count(*) FROM sluice_subscriptions WHERE consumer_id = ?"),
      forget_seen_(db, "DELETE FROM sluice_inbox WHERE consumer_id = ? AND event_id = ?"),
      backfills_(db, "SELECT value FROM sluice_meta WHERE name = 'backfills'"),
      savepoint_(db, "SAVEPOINT sluice_event"),
      release_savepoint_(db, "RELEASE sluice_event"),
      rollback_savepoint_(db, "ROLLBACK TO sluice_event") {}

Deliverer::~Deliverer() = default;

Outbox& Deliverer::outbox() {
  if (!outbox_) outbox_ = std::make_unique<Outbox>(db_, options_);
  return *outbox_;
}

StepResult Deliverer::step(ConsumerSpec& spec, std::optional<Claim>& in_hand, bool stopping) {
  if (spec.gone) return {};
  try {
    if (in_hand) {
      return spec.options.mode == DeliveryMode::kInTransaction
                 ? deliver_in_transaction(spec, in_hand, stopping)
                 : deliver_outside(spec, in_hand, stopping);
    }
    return claim_step(spec, in_hand, stopping);
  } catch (const ClaimLost& lost) {
    // Rolled back: nothing of the step committed. The events are the recovering worker's now.
    log_to(options_, LogLevel::kError, "claim lost; its step is abandoned",
           {{"consumer", spec.name}, {"claim", in_hand ? in_hand->id : 0}, {"error", lost.what()}});
    if (in_hand) recycle(*in_hand);
    in_hand.reset();
    StepResult result;
    result.progressed = true;
    return result;
  } catch (const ConsumerGone& gone) {
    consumer_gone(spec, gone);
    if (in_hand) recycle(*in_hand);
    in_hand.reset();
    return {};
  }
}

void Deliverer::consumer_gone(ConsumerSpec& spec, const ConsumerGone& gone) {
  log_to(options_, LogLevel::kError, "consumer removed; this worker stops delivering for it",
         {{"consumer", spec.name}, {"error", gone.what()}});
  spec.gone = true;
}

StepResult Deliverer::claim_step(ConsumerSpec& spec, std::optional<Claim>& in_hand, bool stopping) {
  StepResult result;
  if (stopping) return result;
  const TimePoint now = clock_->now();
  // Once per step of the clock back (and once for a worker new to the file), not on every step
  // while the clock is behind its old reading: that scanned every pending row each time.
  if (now < spec.latest_now || spec.latest_now == TimePoint::min()) reanchor_retries(spec, now);
  spec.latest_now = now;
  if (!has_work(spec, now)) return result;
  WriteTransaction tx = begin_write();
  const auto locked = std::chrono::steady_clock::now();
  recover_abandoned(spec, now, result);
  add_counters(result);
  bool moved = false;
  std::optional<Claim> claim = claim_into(spec, now, moved);
  const Committed after = on_commit(spec);
  write_consumer_row(spec);
  tx.commit();
  note_committed(after);
  result.held_write_lock = std::chrono::steady_clock::now() - locked;
  SLUICE_CRASH_POINT("after-claim");
  if (claim && spec.hands_out()) durable_claims_.claimed(newest_claimed_seq(*claim, 0));
  result.progressed = claim.has_value() || moved || result.retried + result.dead_lettered > 0;
  in_hand = std::move(claim);
  return result;
}

void Deliverer::reanchor_retries(const ConsumerSpec& spec, TimePoint now) {
  rewind(reanchor_needed_);
  reanchor_needed_.bind(1, static_cast<int64_t>(spec.id));
  reanchor_needed_.bind(2, static_cast<int64_t>(to_millis(now)));
  const bool needed = reanchor_needed_.executeStep();
  rewind(reanchor_needed_);
  if (!needed) return;
  WriteTransaction tx = begin_write();
  rewind(reanchor_retries_);
  reanchor_retries_.bind(1, static_cast<int64_t>(spec.id));
  reanchor_retries_.bind(2, static_cast<int64_t>(to_millis(now)));
  reanchor_retries_.exec();
  tx.commit();
}

bool Deliverer::may_step(ConsumerSpec& spec) {
  if (spec.gone) return false;
  const TimePoint now = clock_->now();
  // The clock set back (or a worker new to the file): step() re-anchors retries, a write.
  if (now < spec.latest_now || spec.latest_now == TimePoint::min()) return true;
  try {
    if (has_work(spec, now)) return true;
    // The reading counts though nothing is stepped: a clock set back below it before the next
    // step is then seen as set back (a retry scheduled meanwhile by another worker re-anchors).
    spec.latest_now = now;
    return false;
  } catch (const ConsumerGone& gone) {
    // As step() does: this consumer stops, the worker's others go on.
    consumer_gone(spec, gone);
    return false;
  }
}

bool Deliverer::has_work(ConsumerSpec& spec, TimePoint now) {
  // Every statement is rewound after its step: one left stepping keeps its read snapshot, and
  // BEGIN IMMEDIATE on a stale snapshot fails with SQLITE_BUSY at once instead of waiting.
  bool live_ones = false;
  if (foreign_claims(spec, now, live_ones)) return true;
  // One claim at a time per ordered consumer: while a live worker holds one, it delivers.
  if (spec.options.ordered && live_ones) return false;
  const ClaimStart at = read_claim_start(spec);
  // Paused: nothing is claimed; the idle worker wakes when the pause ends (IdleCheck).
  if (at.held_at(now)) return false;
  if (*at.newest > at.cursor) return true;
  if (!at.due_at(now)) return false;
  // The claim's own query: a row held back by its key, or of a topic with no handler here, is
  // not work, however long it waits.
  refresh_topic_filter(spec);
  bind_due(due_rows_, spec, now, 1);
  const bool due = due_rows_.executeStep();
  rewind(due_rows_);
  return due;
}

bool Deliverer::foreign_claims(const ConsumerSpec& spec, TimePoint now, bool& live_ones) {
  const std::vector<ClaimBook::Foreign> found = claims_.foreign(spec.id, now, true);
  live_ones = !found.empty() && !found.back().abandoned;
  return !found.empty() && found.back().abandoned;
}

void Deliverer::bind_due(SQLite::Statement& due, ConsumerSpec& spec, TimePoint now, int limit) {
  rewind(due);
  due.bind(1, static_cast<int64_t>(spec.id));
  due.bind(2, static_cast<int64_t>(to_millis(now)));
  due.bind(3, spec.options.ordered ? 1 : 0);
  due.bind(4, limit);
  if (spec.handled_topics.empty()) {
    due.bind(5);
  } else {
    due.bindNoCopy(5, spec.handled_topics);
  }
}

void Deliverer::refresh_topic_filter(ConsumerSpec& spec) {
  rewind(subscription_count_);
  subscription_count_.bind(1, static_cast<int64_t>(spec.id));
  subscription_count_.executeStep();
  const auto subscribed = static_cast<std::size_t>(subscription_count_.getColumn(0).getInt64());
  rewind(subscription_count_);
  spec.handled_topics.clear();
  if (subscribed <= spec.handlers.size() + spec.batch_handlers.size()) return;
  // Another instance subscribed the consumer to a topic this one has no handler for.
  spec.handled_topics = "[";
  const auto add = [&spec](const std::string& topic) {
    if (spec.handled_topics.size() > 1) spec.handled_topics += ',';
    append_json_string(spec.handled_topics, topic);
  };
  for (const auto& handler : spec.handlers) add(handler.first);
  for (const auto& handler : spec.batch_handlers) add(handler.first);
  spec.handled_topics += ']';
}

void Deliverer::recover_abandoned(ConsumerSpec& spec, TimePoint now, StepResult& result) {
  std::vector<ClaimBook::Foreign> abandoned = claims_.foreign(spec.id, now);
  std::erase_if(abandoned, [](const ClaimBook::Foreign& claim) { return !claim.abandoned; });
  for (const ClaimBook::Foreign& claim : abandoned) {
    const std::string error = "crashed: the worker (" + claim.owner +
                              ") died while handling this event; its claim was recovered";
    std::vector<std::pair<Event, int>> victims;
    rewind(unhandled_in_range_);
    unhandled_in_range_.bind(1, static_cast<int64_t>(claim.from_seq));
    unhandled_in_range_.bind(2, static_cast<int64_t>(claim.to_seq));
    unhandled_in_range_.bind(3, static_cast<int64_t>(spec.id));
    while (unhandled_in_range_.executeStep())
      victims.emplace_back(read_event(unhandled_in_range_), 1);
    rewind(claimed_rows_);
    claimed_rows_.bind(1, static_cast<int64_t>(spec.id));
    claimed_rows_.bind(2, static_cast<int64_t>(claim.id));
    while (claimed_rows_.executeStep()) {
      victims.emplace_back(read_event(claimed_rows_),
                           claimed_rows_.getColumn(kEventColumnCount).getInt());
    }
    const long long dead_before = result.dead_lettered;
    for (const auto& [event, attempt] : victims)
      record_crash(spec, event, attempt, victims.size(), error, now, result);
    claims_.close(claim.id);
    if (claim.worker_id) claims_.forget_worker_if_done(*claim.worker_id);
    if (victims.empty()) continue;
    // One line per claim: a relay killed with thousands of events claimed logged a line each.
    const long long dead = result.dead_lettered - dead_before;
    log_to(options_, dead > 0 ? LogLevel::kError : LogLevel::kWarn, "crash recovered",
           {{"consumer", spec.name},
            {"events", victims.size()},
            {"dead_lettered", dead},
            {"first_event_id", victims.front().first.id},
            {"last_event_id", victims.back().first.id},
            {"error", error}});
  }
}

std::int64_t Deliverer::backfills() {
  rewind(backfills_);
  const std::int64_t count = backfills_.executeStep() ? backfills_.getColumn(0).getInt64() : 0;
  rewind(backfills_);
  return count;
}

std::int64_t Deliverer::backfills_in_transaction() {
  if (!backfills_in_transaction_) {
    backfills_in_transaction_ =
        unchanged_since_commit() && committed_->backfills ? *committed_->backfills : backfills();
  }
  return *backfills_in_transaction_;
}

void Deliverer::release_after_backfill(ConsumerSpec& spec, Claim& claim) {
  if (claim.done() || backfills_in_transaction() == claim.backfills) return;
  for (; !claim.done(); ++claim.next) hold_back(spec, claim.items[claim.next], "released");
}

WriteTransaction Deliverer::begin_write() {
  row_change_ = {};
  backfills_in_transaction_.reset();
  pending_due_in_transaction_ = TimePoint::max();
  start_in_transaction_.reset();
  unchanged_in_transaction_.reset();
  return WriteTransaction(db_, begin_, commit_);
}

std::optional<unsigned int> Deliverer::data_version() {
  unsigned int version = 0;
  if (sqlite3_file_control(db_.getHandle(), "main", SQLITE_FCNTL_DATA_VERSION, &version) !=
      SQLITE_OK) {
    return std::nullopt;
  }
  return version;
}

bool Deliverer::unchanged_since_commit() {
  if (!unchanged_in_transaction_) {
    unchanged_in_transaction_ = committed_ && data_version() == committed_->version;
    // The version only grows: once it differs, what committed_ says is stale for good.
    if (!*unchanged_in_transaction_) committed_.reset();
  }
  return *unchanged_in_transaction_;
}

void Deliverer::write_cursor(std::int64_t cursor) { row_change_.cursor = cursor; }

void Deliverer::write_consumer_row(const ConsumerSpec& spec) {
  ConsumerRowChange& change = row_change_;
  if (change.throttle_until) {
    rewind(throttle_consumer_);
    throttle_consumer_.bind(1, static_cast<int64_t>(spec.id));
    throttle_consumer_.bind(2, static_cast<int64_t>(to_millis(clock_->now())));
    throttle_consumer_.bind(3, static_cast<int64_t>(to_millis(*change.throttle_until)));
    if (change.throttle_reason.empty()) {
      throttle_consumer_.bind(4);
    } else {
      throttle_consumer_.bind(4, change.throttle_reason);
    }
    throttle_consumer_.bind(5, static_cast<int64_t>(change.throttled));
    throttle_consumer_.exec();
    change.throttle_until.reset();
    change.throttled = 0;
  }
  if (spec.options.breaker && !change.breaker.empty()) {
    write_breaker_state(db_, spec.id, spec.name, *spec.options.breaker, change.breaker,
                        clock_->now(), options_);
    change.breaker = {};
  }
  if (change.delivered + change.retried + change.snoozed == 0 && !change.cursor) return;
  rewind(update_consumer_);
  update_consumer_.bind(1, static_cast<int64_t>(spec.id));
  update_consumer_.bind(2, static_cast<int64_t>(change.delivered));
  update_consumer_.bind(3, static_cast<int64_t>(change.retried));
  update_consumer_.bind(4, static_cast<int64_t>(change.snoozed));
  if (change.cursor) {
    update_consumer_.bind(5, static_cast<int64_t>(*change.cursor));
  } else {
    update_consumer_.bind(5);
  }
  update_consumer_.exec();
  row_change_ = {};
}

Deliverer::ClaimStart Deliverer::read_claim_start(const ConsumerSpec& spec) {
  rewind(claim_start_);
  claim_start_.bind(1, static_cast<int64_t>(spec.id));
  if (!claim_start_.executeStep()) {
    throw ConsumerGone("sluice: consumer '" + spec.name +
                       "' is no longer in the file (removed, perhaps added again under a new id)");
  }
  ClaimStart start;
  start.cursor = claim_start_.getColumn(0).getInt64();
  start.newest = claim_start_.getColumn(1).getInt64();
  if (!claim_start_.isColumnNull(2))
    start.next_due = TimePoint(Duration(claim_start_.getColumn(2).getInt64()));
  if (!claim_start_.isColumnNull(3)) {
    start.held_until = claim_start_.isColumnNull(4)
                           ? TimePoint::max()
                           : TimePoint(Duration(claim_start_.getColumn(4).getInt64()));
  }
  // Only a deliverer that counts the breaker's failures heeds it (a worker's, or an SQL
  // claimer's, whose sluice_done and sluice_fail count them): one that only probed would keep it
  // open for good.
  if (spec.options.breaker && !claim_start_.isColumnNull(5))
    start.breaker_until = TimePoint(Duration(claim_start_.getColumn(5).getInt64()));
  rewind(claim_start_);
  return start;
}

Deliverer::ClaimStart Deliverer::claim_start(const ConsumerSpec& spec, TimePoint now) {
  // A cursor noted in this transaction is not in the row yet, nor known to committed_.
  if (!row_change_.cursor && unchanged_since_commit() && committed_->consumer_id == spec.id) {
    ClaimStart known;
    known.cursor = committed_->cursor;
    // Rows this transaction made pending before the claim count too.
    known.next_due = std::min(committed_->next_due, pending_due_in_transaction_);
    known.held_until = committed_->held_until;
    known.breaker_until = committed_->breaker_until;
    // Due rows are claimed by the statements, which know which are held back.
    if (!known.due_at(now)) return known;
  }
  return read_claim_start(spec);
}

std::int64_t Deliverer::newest_seq() {
  rewind(newest_seq_);
  newest_seq_.executeStep();
  const std::int64_t newest = newest_seq_.getColumn(0).getInt64();
  rewind(newest_seq_);
  return newest;
}

std::int64_t Deliverer::next_seq_after(std::int64_t seq) {
  // Rare (a gap of a whole scan window), so prepared when needed.
  SQLite::Statement next(db_, "SELECT min(seq) FROM sluice_events WHERE seq > ?");
  next.bind(1, static_cast<int64_t>(seq));
  next.executeStep();
  return next.getColumn(0).getInt64();
}

Deliverer::Committed Deliverer::on_commit(const ConsumerSpec& spec) const {
  Committed after;
  after.backfills = backfills_in_transaction_;
  if (start_in_transaction_ && start_in_transaction_->first == spec.id) {
    const ClaimStart& start = start_in_transaction_->second;
    after.consumer_id = spec.id;
    after.cursor = row_change_.cursor.value_or(start.cursor);
    after.next_due = std::min(start.next_due, pending_due_in_transaction_);
    after.held_until = start.held_until;
    after.breaker_until = start.breaker_until;
  }
  // A throttle's pause is merged into the row by SQL (an operator's pause wins), and the breaker
  // moves by what this transaction saw: read them again.
  if (row_change_.throttle_until || !row_change_.breaker.empty() || row_change_.probe_claimed)
    after.consumer_id = 0;
  return after;
}

void Deliverer::note_committed(Committed after) {
  committed_.reset();
  if (const std::optional<unsigned int> version = data_version()) {
    after.version = *version;
    committed_ = after;
  }
}

std::optional<Claim> Deliverer::claim_into(ConsumerSpec& spec, TimePoint now, bool& moved,
                                           std::int64_t finished_claim) {
  // One claim at a time per ordered consumer, or two workers could reorder a key.
  if (spec.options.ordered && claims_.any_foreign(spec.id)) {
    if (finished_claim != 0) claims_.close(finished_claim);
    return std::nullopt;
  }
  const ClaimStart at = claim_start(spec, now);
  const std::int64_t cursor = at.cursor;
  start_in_transaction_.emplace(spec.id, at);
  if (held_in_transaction(spec, at, now)) {
    if (finished_claim != 0) claims_.close(finished_claim);
    return std::nullopt;
  }
  // A half-open breaker lets one event through: the consumer's oldest due one.
  const bool probe = at.half_open_at(now);
  const int limit = probe ? 1 : options_.batch_size;

  Claim claim;
  claim.items = std::move(spare_items_);
  claim.backfills = backfills_in_transaction();
  // A finished claim is renewed below, once its range is known: one write instead of a delete
  // and an insert (and their entries in the consumer index).
  claim.id = finished_claim != 0 ? finished_claim : claims_.open(spec.id, cursor, now);

  // Events whose batch crashed are retried in ever smaller groups, apart from other work, so a
  // poison event cannot take innocent ones down with it again and again.
  const bool due = at.due_at(now);
  if (due) claim_due(spec, now, claim.id, true, limit, claim.items);
  std::int64_t end = cursor;
  if (claim.items.empty()) {
    if (due) {
      refresh_topic_filter(spec);
      claim_due(spec, now, claim.id, false, limit, claim.items);
    }
    const int room = limit - static_cast<int>(claim.items.size());
    if (room > 0) end = claim_fresh(spec, now, cursor, at.newest, room, claim);
    moved = end != cursor;
  }
  if (claim.items.empty()) {
    claims_.close(claim.id);
    recycle(claim);
    return std::nullopt;
  }
  if (probe) {
    claim.probe = true;
    claim_breaker_probe(db_, spec.id, spec.name, now, options_);
    row_change_.probe_claimed = true;
  }
  if (finished_claim != 0) {
    claims_.renew(claim.id, cursor, end, now);
  } else if (moved) {
    claims_.move_end(claim.id, end);
  }
  std::sort(claim.items.begin(), claim.items.end(),
            [](const ClaimedItem& a, const ClaimedItem& b) { return a.event.seq < b.event.seq; });
  return claim;
}

std::int64_t Deliverer::claim_fresh(ConsumerSpec& spec, TimePoint now, std::int64_t cursor,
                                    std::optional<std::int64_t> newest, int room, Claim& claim) {
  // Saturating: a cursor edited near the largest seq must not overflow.
  std::int64_t scan_end = cursor > INT64_MAX - kScanWindow ? INT64_MAX : cursor + kScanWindow;
  if (newest) {
    // Pruning the newest events can leave the cursor past the newest seq.
    if (*newest <= cursor) return cursor;
    scan_end = std::min(*newest, scan_end);
  }
  // Events not to be handled yet are held back and leave the claim. Whether any row of the
  // consumer holds back a key is asked once; without one, only the keys held back here can block
  // a later event (a query per keyed event cost a relay 3.5k instructions per event).
  const bool rows_hold_keys = spec.options.ordered && any_key_held(spec);
  std::set<std::string> held_here;
  const std::size_t first = claim.items.size();
  std::int64_t read_to = cursor;
  // Reads on past held-back events until the claim is full, the scan window ends or the batch's
  // time budget is spent (each held-back event is a row written under the write lock): a due event
  // behind many delayed ones is claimed now or in the steps right after, not one poll interval
  // per batch later.
  const auto began = std::chrono::steady_clock::now();
  do {
    const int want = room - static_cast<int>(claim.items.size() - first);
    rewind(fresh_events_);
    fresh_events_.bind(1, static_cast<int64_t>(read_to));
    fresh_events_.bind(2, static_cast<int64_t>(scan_end));
    fresh_events_.bind(3, static_cast<int64_t>(spec.id));
    fresh_events_.bind(4, want);
    // Read straight into the claim, reserved rather than grown: each growth moves every event
    // read so far, and each large allocation makes malloc consolidate its free lists.
    const std::size_t before = claim.items.size();
    claim.items.reserve(before +
                        static_cast<std::size_t>(std::min<std::int64_t>(want, scan_end - read_to)));
    while (fresh_events_.executeStep()) claim.items.push_back({read_event(fresh_events_), 1, true});
    rewind(fresh_events_);
    const std::size_t fetched = claim.items.size() - before;
    if (fetched < static_cast<std::size_t>(want) && !newest) {
      // Read to the end: the cursor moves past the events of other topics up to the newest one
      // (never back, should pruning have left it past the newest).
      newest = newest_seq();
      scan_end = std::max(read_to, std::min(*newest, scan_end));
    }
    if (fetched == 0 && scan_end < *newest) {
      // Not one event in the window: a gap in seq (everything in it pruned, or a cursor edited
      // far back) is crossed at once, not one window a step, which for a cursor of -3e18 was
      // never.
      read_to = next_seq_after(scan_end) - 1;
      scan_end = std::min(*newest, read_to + kScanWindow);
      continue;
    }
    read_to = fetched == static_cast<std::size_t>(want) ? claim.items.back().event.seq : scan_end;
    std::size_t kept = before;
    for (std::size_t i = before; i < claim.items.size(); ++i) {
      ClaimedItem& item = claim.items[i];
      const bool keyed = spec.options.ordered && !item.event.key.empty();
      if (item.event.not_before && *item.event.not_before > now) {
        hold_until(spec, item, *item.event.not_before);
      } else if (!spec.has_handler(item.event.topic)) {
        // Left for an instance that has the handler (a rolling deploy), no attempt spent.
        hold_back(spec, item, "unhandled");
      } else if (keyed && (held_here.count(item.event.key) > 0 ||
                           (rows_hold_keys && key_blocked(spec, item)))) {
        hold_back(spec, item, "blocked");
      } else {
        if (kept != i) claim.items[kept] = std::move(item);
        ++kept;
        continue;
      }
      if (keyed) held_here.insert(item.event.key);
    }
    claim.items.resize(kept);
  } while (read_to < scan_end && claim.items.size() - first < static_cast<std::size_t>(room) &&
           std::chrono::steady_clock::now() - began < options_.batch_time_budget);
  if (read_to != cursor) write_cursor(read_to);
  return read_to;
}

bool Deliverer::held_in_transaction(const ConsumerSpec& spec, const ClaimStart& at, TimePoint now,
                                    bool probe) const {
  return at.held_at(now, probe) ||
         (row_change_.throttle_until && *row_change_.throttle_until > now) ||
         (spec.options.breaker && row_change_.breaker.opens(*spec.options.breaker));
}

bool Deliverer::held_now(const ConsumerSpec& spec, TimePoint now, bool probe) {
  return read_claim_start(spec).held_at(now, probe);
}

BreakerTally* Deliverer::breaker_tally(const ConsumerSpec& spec) {
  if (!spec.options.breaker) return nullptr;
  BreakerTally& tally = row_change_.breaker;
  if (!tally.before) tally.before = read_breaker_state(db_, spec.id);
  return &tally;
}

bool Deliverer::release_while_held(ConsumerSpec& spec, Claim& claim, TimePoint now) {
  if (claim.done() || !held_in_transaction(spec, claim_start(spec, now), now, claim.probe))
    return false;
  for (; !claim.done(); ++claim.next) hold_back(spec, claim.items[claim.next], "released");
  return true;
}

bool Deliverer::any_key_held(const ConsumerSpec& spec) {
  rewind(any_key_held_);
  any_key_held_.bind(1, static_cast<int64_t>(spec.id));
  const bool held = any_key_held_.executeStep();
  rewind(any_key_held_);
  return held;
}

bool Deliverer::key_blocked(const ConsumerSpec& spec, const ClaimedItem& item) {
  rewind(key_blocked_);
  key_blocked_.bind(1, static_cast<int64_t>(spec.id));
  key_blocked_.bindNoCopy(2, item.event.key);
  key_blocked_.bind(3, static_cast<int64_t>(item.event.seq));
  const bool blocked = key_blocked_.executeStep();
  rewind(key_blocked_);
  return blocked;
}

void Deliverer::extend_claim(ConsumerSpec& spec, Claim& claim, TimePoint now) {
  const int room = options_.batch_size - static_cast<int>(claim.items.size() - claim.next);
  if (room <= 0) return;
  const ClaimStart at = read_claim_start(spec);
  // Nor while the breaker is anything but closed: a half-open one lets one event through.
  if (held_in_transaction(spec, at, now) || at.breaker_until) return;
  const std::int64_t end = claim_fresh(spec, now, at.cursor, at.newest, room, claim);
  if (end != at.cursor) claims_.move_end(claim.id, end);
}

void Deliverer::claim_due(ConsumerSpec& spec, TimePoint now, std::int64_t claim_id,
                          bool suspects_only, int limit, std::vector<ClaimedItem>& items) {
  SQLite::Statement& due = suspects_only ? due_suspects_ : due_rows_;
  const std::size_t first = items.size();
  bind_due(due, spec, now, limit);
  std::vector<std::size_t> backfilled;
  // Crash suspects are claimed in the group size their crash gave them (see record_crash): as
  // many as the first due one's, of those with the same size.
  int group = 0;
  while (items.size() - first < static_cast<std::size_t>(limit) && due.executeStep()) {
    if (suspects_only) {
      const int size = due.getColumn(kEventColumnCount + 2).getInt();
      if (group == 0) {
        group = size;
        limit = std::min(limit, size);
      } else if (size != group) {
        continue;
      }
    }
    const int attempts = due.getColumn(kEventColumnCount).getInt();
    if (due.getColumn(kEventColumnCount + 1).getString() == "backfilled") {
      backfilled.push_back(items.size());
    }
    items.push_back({read_event(due), attempts + 1, false});
  }
  rewind(due);
  // A backfill cleared the event's seen mark, but a worker that was handling the event at that
  // moment may have marked it seen again since: the backfill asked for one more delivery.
  for (std::size_t i : backfilled) {
    rewind(forget_seen_);
    forget_seen_.bind(1, static_cast<int64_t>(spec.id));
    forget_seen_.bindNoCopy(2, items[i].event.id);
    forget_seen_.exec();
  }
  for (std::size_t i = first; i < items.size(); ++i) {
    rewind(mark_claimed_);
    mark_claimed_.bind(1, static_cast<int64_t>(spec.id));
    mark_claimed_.bind(2, static_cast<int64_t>(items[i].event.seq));
    mark_claimed_.bind(3, static_cast<int64_t>(claim_id));
    mark_claimed_.exec();
  }
}

StepResult Deliverer::deliver_in_transaction(ConsumerSpec& spec, std::optional<Claim>& in_hand,
                                             bool stopping) {
  StepResult result;
  Claim& claim = *in_hand;
  const std::size_t start = claim.next;
  // The claim's failed keys outlive this transaction (the budget may end it between two events
  // of a key), and go back to what they were if it is abandoned.
  const std::set<std::string> failed_before = claim.failed_keys;
  std::optional<Claim> next;
  for (bool committed = false; !committed;) {
    try {
      WriteTransaction tx = begin_write();
      row_change_.breaker.probe = claim.probe;
      // Before any handler runs: a resumed worker whose claim was recovered calls none.
      claims_.check_held(claim.id);
      const auto began = std::chrono::steady_clock::now();
      const TimePoint now = clock_->now();
      release_after_backfill(spec, claim);
      // Paused since the claim was made: none of the rest is handed to its handler.
      release_while_held(spec, claim, now);
      // The step's delivery rows are written together when it commits (commit_step); nothing
      // of the step reads them before.
      deferred_count_ = 0;
      defer_rows_ = true;
      while (!claim.done()) {
        if (claim.next > start &&
            std::chrono::steady_clock::now() - began >= options_.batch_time_budget) {
          break;
        }
        handle_in_transaction(spec, claim, claim.next == start, now, result);
        ++claim.next;
        // A throttle pauses the whole consumer, as opening the breaker does: the rest of the
        // claim goes back uncalled.
        if (row_change_.throttle_until ||
            (spec.options.breaker && row_change_.breaker.opens(*spec.options.breaker))) {
          release_while_held(spec, claim, now);
        }
      }
      next = commit_step(tx, spec, claim, start, stopping, now, result);
      claim.step_outcomes.clear();
      result.held_write_lock = std::chrono::steady_clock::now() - began;
      committed = true;
    } catch (StepRolledBack&) {
      defer_rows_ = false;
      // The step runs again at once. The failures are recorded without calling their handlers a
      // second time; the handlers that succeeded before the failed one run again, as their
      // writes were rolled back with it, and with a savepoint each from now on.
      if (claim.next > start) claim.savepoints = true;
      claim.next = start;
      claim.failed_keys = failed_before;
      claim.known_outcomes.merge(claim.step_outcomes);
      claim.step_outcomes.clear();
      result = StepResult{};
    } catch (...) {
      defer_rows_ = false;
      // Kept for when the step runs again, so that no failure is met twice.
      claim.known_outcomes.merge(claim.step_outcomes);
      claim.step_outcomes.clear();
      claim.next = start;
      claim.failed_keys = failed_before;
      throw;
    }
  }
  if (claim.done()) {
    recycle(*in_hand);
    in_hand = std::move(next);
  }
  return result;
}

std::optional<Claim> Deliverer::commit_step(WriteTransaction& tx, ConsumerSpec& spec, Claim& claim,
                                            std::size_t start, bool stopping, TimePoint now,
                                            StepResult& result) {
  write_deferred_rows();
  // A finished claim's row is renewed for the next claim, or deleted if there is none.
  const bool renew = claim.done() && !stopping;
  if (claim.done() && stopping) {
    claims_.close(claim.id);
  } else if (!claim.done()) {
    std::int64_t progress = -1;
    for (std::size_t i = start; i < claim.next; ++i) {
      if (claim.items[i].fresh) progress = claim.items[i].event.seq;
    }
    if (progress >= 0) claims_.advance(claim.id, progress);
  }
  add_counters(result);
  result.progressed = true;
  // Claiming the next batch in this transaction saves a commit per batch; the claim is still
  // durable before any of its handlers run.
  std::optional<Claim> next;
  bool moved = false;
  if (renew) next = claim_into(spec, now, moved, claim.id);
  const Committed after = on_commit(spec);
  write_consumer_row(spec);
  SLUICE_CRASH_POINT("before-commit");
  tx.commit();
  SLUICE_CRASH_POINT("after-commit");
  note_committed(after);
  return next;
}

void Deliverer::handle_in_transaction(ConsumerSpec& spec, Claim& claim, bool first, TimePoint now,
                                      StepResult& result) {
  const ClaimedItem& item = claim.items[claim.next];
  std::set<std::string>& failed_keys = claim.failed_keys;
  const Event& event = item.event;
  const bool keyed = spec.options.ordered && !event.key.empty();
  if (keyed && failed_keys.count(event.key) > 0) {
    hold_back(spec, item, "blocked");
    return;
  }
  const auto handler = spec.handlers.find(event.topic);
  if (handler == spec.handlers.end()) {
    // Claimed before another instance subscribed the consumer to the topic: left for that one.
    hold_back(spec, item, "unhandled");
    if (keyed) failed_keys.insert(event.key);
    return;
  }
  if (const auto known = claim.known_outcomes.find(claim.next);
      known != claim.known_outcomes.end()) {
    const Outcome outcome = std::move(known->second);
    claim.known_outcomes.erase(known);
    claim.step_outcomes.emplace(claim.next, outcome);
    if (outcome.kind == Outcome::Kind::kDone) {
      // Seen before: its effect was committed by an earlier pass.
      if (!item.fresh) settle_delivery(spec.id, item, now, "seen");
      return;
    }
    if (keyed) failed_keys.insert(event.key);
    record_failure(spec, item, outcome, now, result);
    return;
  }
  // A savepoint per event would let a failed handler's writes be undone alone, but it costs a
  // statement-journal copy of every page the event writes: a third of a delivery. Most handlers
  // succeed, and a failing one has often written nothing (it failed validating, or calling out),
  // so a step runs without them; one that fails after writing rolls the step back
  // (StepRolledBack). The step's first handler never needs one: rolling back the whole step
  // undoes its writes and nothing that only a handler could redo.
  const bool savepoint = claim.savepoints && !first;
  if (savepoint) {
    savepoint_.exec();
    rewind(savepoint_);
  }
  const int changes_before = sqlite3_total_changes(db_.getHandle());
  Outcome outcome;
  {
    HandlerContext context(spec.name, item.attempt, &db_, &outbox());
    SLUICE_CRASH_POINT("handler-before-write");
    AttemptTrace trace(options_.tracer.get(), spec.name, event, item.attempt);
    outcome = call_handler(handler->second, event, context, guard_);
    trace.end(outcome);
    // What it wrote (a replay, say) commits at this connection's level, unseen by the data
    // version that tells the next outside claim whether its causes are durable already.
    if (sqlite3_total_changes(db_.getHandle()) != changes_before) durable_claims_.forget();
    if (!in_transaction(db_)) {
      throw DatabaseError("sluice: deliver: the delivery transaction was rolled back while '" +
                              spec.name + "' handled event " + event.id + ": " + outcome.error,
                          SQLITE_ABORT);
    }
  }
  const bool done = outcome.kind == Outcome::Kind::kDone;
  // Marked seen after the handler, so a failure has only the handler's writes to undo. An event
  // seen before (its effect committed by an earlier pass) has its second effect undone.
  if (done && mark_seen(spec.id, event.id, now)) {
    if (savepoint) {
      release_savepoint_.exec();
      rewind(release_savepoint_);
    }
    delivered(spec, item, now, result);
    return;
  }
  if (savepoint) {
    rollback_savepoint_.exec();
    rewind(rollback_savepoint_);
    release_savepoint_.exec();
    rewind(release_savepoint_);
  } else if (handler_may_have_written(changes_before)) {
    claim.step_outcomes.emplace(claim.next, std::move(outcome));
    throw StepRolledBack{};
  }
  const Outcome& kept = claim.step_outcomes.emplace(claim.next, std::move(outcome)).first->second;
  if (done) {
    if (!item.fresh) settle_delivery(spec.id, item, now, "seen");
    return;
  }
  if (keyed) failed_keys.insert(event.key);
  record_failure(spec, item, kept, now, result);
}

bool Deliverer::handler_may_have_written(int changes_before) const {
  sqlite3* handle = db_.getHandle();
  if (sqlite3_total_changes(handle) != changes_before || guard_.prepared_uncounted()) return true;
  for (sqlite3_stmt* s = sqlite3_next_stmt(handle, nullptr); s != nullptr;
       s = sqlite3_next_stmt(handle, s)) {
    if (sqlite3_stmt_busy(s) != 0 && sqlite3_stmt_readonly(s) == 0) return true;
  }
  return false;
}

StepResult Deliverer::deliver_outside(ConsumerSpec& spec, std::optional<Claim>& in_hand,
                                      bool stopping) {
  StepResult result;
  Claim& claim = *in_hand;
  std::optional<Claim> next;
  const auto began = std::chrono::steady_clock::now();
  // Paused since the claim was made: nothing of it is handed to a handler.
  if (held_now(spec, clock_->now(), claim.probe)) {
    release(spec, in_hand);
    result.progressed = true;
    return result;
  }
  OutsideGroup group = prepare_outside(spec, claim, claim.next);
  run_outside(group);
  return_events(group, claim);
  while (true) {
    // As they were before this group, for when its commit fails and it is handled again.
    const std::set<std::string> failed_before = claim.failed_keys;
    hold_after_failures(spec, claim, group, claim.failed_keys);
    // The following batch goes to its handler on another thread while this one's outcomes
    // commit: a batch handler mostly waits (e.g. for a broker's acknowledgements), and neither
    // needs the other. It is prepared after this batch's failed keys are known, so per-key order
    // holds, and it was claimed durably before.
    // No later item starts once a backfill has run since the claim (see release_after_backfill).
    const bool backfilled = backfills() != claim.backfills;
    std::optional<OutsideGroup> ahead;
    // Nor once the consumer is paused: by this batch's throttle (not committed yet), or by
    // anyone else.
    const bool throttled = std::any_of(group.outcomes.begin(), group.outcomes.end(),
                                       [](const Outcome& outcome) {
                                         return outcome.kind == Outcome::Kind::kThrottle;
                                       }) ||
                           (spec.options.breaker && ends_in_failures(group.outcomes, group.held));
    if (!backfilled && !throttled && group.end < claim.items.size() &&
        spec.batch_handlers.count(claim.items[group.end].event.topic) > 0 &&
        !held_now(spec, clock_->now(), claim.probe)) {
      // A worker that stalled in this batch's handler past the recovery of its claim hands none
      // of the claim's later events to a handler: they are another worker's now (the commit
      // below would refuse this batch's outcomes, but only after the next batch had gone out).
      claims_.check_held(claim.id);
      ahead = prepare_outside(spec, claim, group.end);
      handler_thread_.run([&ahead] { run_outside(*ahead); });
    }
    // With a batch running ahead and nothing claimed behind it, claim more now, so that the
    // next batch is ready when it returns.
    const bool extend = ahead && ahead->end == claim.items.size() && !stopping &&
                        std::chrono::steady_clock::now() - began < kRollingClaimLimit;
    const std::size_t claimed = claim.items.size();
    StepResult committed;
    try {
      WriteTransaction tx = begin_write();
      row_change_.breaker.probe = claim.probe;
      // A worker that stalled in its handler past the recovery of its claim commits nothing.
      claims_.check_held(claim.id);
      const auto locked = std::chrono::steady_clock::now();
      const TimePoint now = clock_->now();
      fresh_done_.clear();
      for (std::size_t i = group.start; i < group.end; ++i) {
        const ClaimedItem& item = claim.items[i];
        const Outcome& outcome = group.outcomes[i - group.start];
        if (const char* held = group.held[i - group.start]) {
          hold_back(spec, item, held);
        } else if (item.fresh && outcome.kind == Outcome::Kind::kDone) {
          fresh_done_.push_back(&item.event.id);
          if (BreakerTally* tally = breaker_tally(spec)) {
            tally->success = true;
            tally->trailing_failures = 0;
          }
        } else {
          apply_outcome(spec, item, outcome, now, committed);
        }
      }
      mark_fresh_seen(spec, fresh_done_, now, committed);
      claim.next = group.end;
      if (backfilled) release_after_backfill(spec, claim);
      // Paused (perhaps by this group's throttle): the rest goes back uncalled. A batch running
      // ahead was handed over already; its outcomes commit next, and the rest goes back then.
      if (!ahead) release_while_held(spec, claim, now);
      if (extend) extend_claim(spec, claim, now);
      next = commit_step(tx, spec, claim, group.start, stopping, now, committed);
      result.held_write_lock =
          std::max(result.held_write_lock, std::chrono::steady_clock::now() - locked);
      // Only a commit that claimed more (this claim's extension, or the next claim) is made
      // durable: an outcome alone loses nothing to a power cut but its own record.
      std::int64_t newest = newest_claimed_seq(claim, claimed);
      if (next) newest = std::max(newest, newest_claimed_seq(*next, 0));
      if (newest > 0) durable_claims_.claimed(newest);
    } catch (...) {
      claim.next = group.start;
      claim.failed_keys = failed_before;
      claim.items.resize(claimed);
      if (ahead) {
        handler_thread_.wait();
        return_events(*ahead, claim);
      }
      throw;
    }
    result.progressed = true;
    result.delivered += committed.delivered;
    result.retried += committed.retried;
    result.snoozed += committed.snoozed;
    result.dead_lettered += committed.dead_lettered;
    if (claim.done()) break;
    if (ahead) {
      std::exception_ptr error = handler_thread_.wait();
      return_events(*ahead, claim);
      if (error) std::rethrow_exception(error);
      group = std::move(*ahead);
    } else {
      group = prepare_outside(spec, claim, claim.next);
      run_outside(group);
      return_events(group, claim);
    }
  }
  recycle(claim);
  in_hand = std::move(next);
  return result;
}

Deliverer::OutsideGroup Deliverer::prepare_outside(ConsumerSpec& spec, Claim& claim,
                                                   std::size_t start) {
  OutsideGroup group;
  group.start = start;
  group.end = start + 1;
  group.consumer = spec.name;
  group.attempt = claim.items[start].attempt;
  group.tracer = options_.tracer.get();
  const std::string& topic = claim.items[start].event.topic;
  // A batch handler takes the following items of its topics, half a claim at most, so that one
  // half can be handled while the other commits; a plain handler takes one item. A batch ending
  // at every change of topic cost a handler taking two alternating topics a call and a commit
  // per event.
  const auto batch_handler = spec.batch_handlers.find(topic);
  if (batch_handler != spec.batch_handlers.end()) {
    group.batch_handler = batch_handler->second.get();
    const std::size_t most = std::max(1, options_.batch_size / 2);
    const auto same_handler = [&](const std::string& next) {
      if (next == topic) return true;
      const auto found = spec.batch_handlers.find(next);
      return found != spec.batch_handlers.end() && found->second == batch_handler->second;
    };
    while (group.end < claim.items.size() && group.end - start < most &&
           same_handler(claim.items[group.end].event.topic)) {
      ++group.end;
    }
  } else if (const auto handler = spec.handlers.find(topic); handler != spec.handlers.end()) {
    group.handler = &handler->second;
  }
  group.outcomes.resize(group.end - start);
  // No handler here: claimed before another instance subscribed the consumer to the topic.
  group.held.assign(group.end - start, group.batch_handler == nullptr && group.handler == nullptr
                                           ? "unhandled"
                                           : nullptr);
  group.batch.reserve(group.end - start);
  group.batch_index.reserve(group.end - start);
  for (std::size_t i = start; i < group.end; ++i) {
    const ClaimedItem& item = claim.items[i];
    // Done already: a crash after the effect. Only a retried item can be: a fresh one comes from
    // past the cursor, which this consumer never had (a crashed claim's items come back retried).
    if (group.held[i - start] != nullptr) continue;
    if (!item.fresh && seen(spec.id, item.event.id)) continue;
    if (spec.options.ordered && !item.event.key.empty() &&
        claim.failed_keys.count(item.event.key) > 0) {
      group.held[i - start] = "blocked";
      continue;
    }
    group.batch_index.push_back(i - start);
  }
  // Moved only once nothing more can throw, so a failed check leaves the claim whole.
  for (std::size_t j : group.batch_index)
    group.batch.push_back(std::move(claim.items[start + j].event));
  return group;
}

void Deliverer::return_events(OutsideGroup& group, Claim& claim) {
  for (std::size_t j = 0; j < group.batch.size(); ++j)
    claim.items[group.start + group.batch_index[j]].event = std::move(group.batch[j]);
  group.batch.clear();
}

void Deliverer::hold_after_failures(const ConsumerSpec& spec, const Claim& claim,
                                    OutsideGroup& group, std::set<std::string>& failed_keys) {
  if (!spec.options.ordered) return;
  for (std::size_t i = group.start; i < group.end; ++i) {
    const std::string& key = claim.items[i].event.key;
    if (key.empty()) continue;
    const char*& held = group.held[i - group.start];
    if (held == nullptr && failed_keys.count(key) > 0) {
      // The handler already ran it (at least once, as an outside consumer's effect is); it runs
      // again after the earlier event of its key, so the key's last effects come in order.
      held = "blocked";
    } else if (held != nullptr || group.outcomes[i - group.start].kind != Outcome::Kind::kDone) {
      failed_keys.insert(key);
    }
  }
}

void Deliverer::run_outside(OutsideGroup& group) {
  if (group.batch.empty()) return;
  if (group.batch_handler != nullptr) {
    AttemptTrace trace(group.tracer, group.consumer, group.batch, group.attempt);
    std::vector<Outcome> results;
    try {
      results = (*group.batch_handler)(group.batch);
      if (results.size() != group.batch.size()) {
        results.assign(
            group.batch.size(),
            Outcome::retry("the batch handler returned " + std::to_string(results.size()) +
                           " outcomes for " + std::to_string(group.batch.size()) + " events"));
      }
    } catch (const PermanentError& e) {
      results.assign(group.batch.size(), Outcome::permanent(e.what()));
    } catch (const Throttled& e) {
      results.assign(group.batch.size(), Outcome::throttle(e.delay(), e.reason()));
    } catch (const std::exception& e) {
      results.assign(group.batch.size(), Outcome::retry(e.what()));
    } catch (...) {
      results.assign(group.batch.size(),
                     Outcome::retry("the handler threw a non-standard exception"));
    }
    trace.end(results);
    for (std::size_t j = 0; j < group.batch.size(); ++j)
      group.outcomes[group.batch_index[j]] = std::move(results[j]);
    return;
  }
  Outcome& outcome = group.outcomes[group.batch_index.front()];
  HandlerContext context(group.consumer, group.attempt, nullptr, nullptr);
  AttemptTrace trace(group.tracer, group.consumer, group.batch.front(), group.attempt);
  outcome = call_outside_handler(*group.handler, group.batch.front(), context);
  trace.end(outcome);
}

void Deliverer::apply_outcome(ConsumerSpec& spec, const ClaimedItem& item, const Outcome& outcome,
                              TimePoint now, StepResult& result) {
  if (outcome.kind != Outcome::Kind::kDone) {
    record_failure(spec, item, outcome, now, result);
  } else if (mark_seen(spec.id, item.event.id, now)) {
    delivered(spec, item, now, result);
  } else if (!item.fresh) {
    settle_delivery(spec.id, item, now, "seen");
  }
}

void Deliverer::delivered(ConsumerSpec& spec, const ClaimedItem& item, TimePoint now,
                          StepResult& result) {
  ++result.delivered;
  if (BreakerTally* tally = breaker_tally(spec)) {
    tally->success = true;
    tally->trailing_failures = 0;
  }
  if (!item.fresh) settle_delivery(spec.id, item, now, "delivered");
}

void Deliverer::record_failure(ConsumerSpec& spec, const ClaimedItem& item, const Outcome& outcome,
                               TimePoint now, StepResult& result) {
  const Event& event = item.event;
  if (outcome.kind == Outcome::Kind::kThrottle) {
    // Due again at once: the consumer's pause, not the row, holds it back.
    write_delivery(spec.id, event, "pending", item.attempt - 1, now, 0, "throttled", {},
                   std::nullopt, now);
    ++result.throttled;
    const TimePoint until = add_saturating(now, std::max(outcome.delay, Duration(0)));
    if (!row_change_.throttle_until || until > *row_change_.throttle_until) {
      row_change_.throttle_until = until;
      row_change_.throttle_reason = outcome.error;
    }
    log(LogLevel::kWarn, "throttled; the consumer pauses", spec, event, item.attempt, outcome.error,
        now);
    return;
  }
  if (outcome.kind == Outcome::Kind::kSnooze) {
    write_delivery(spec.id, event, "pending", item.attempt - 1, add_saturating(now, outcome.delay),
                   0, "snoozed", {}, std::nullopt, now);
    ++result.snoozed;
    return;
  }
  const std::string& error = outcome.error;
  BreakerTally* tally = outcome.kind == Outcome::Kind::kRetry ? breaker_tally(spec) : nullptr;
  if (tally != nullptr) {
    ++tally->trailing_failures;
    if (tally->probe) {
      // The failed probe is logged as the attempt it was, but spends none: the breaker opens
      // again and the event waits for the next probe, however long the outage lasts.
      write_delivery(spec.id, event, "pending", item.attempt - 1, now, 0, "retry", error, now, now,
                     item.attempt);
      ++result.retried;
      log(LogLevel::kWarn, "breaker probe failed", spec, event, item.attempt, error, now);
      return;
    }
  }
  const char* reason = nullptr;
  if (outcome.kind == Outcome::Kind::kPermanent) {
    reason = "permanent";
  } else if (item.attempt >= spec.retry.max_attempts) {
    reason = "exhausted";
  }
  if (reason != nullptr) {
    SLUICE_CRASH_POINT("during-dead-letter");
    write_delivery(spec.id, event, "dead", item.attempt, now, 0, reason, error, now, now);
    ++result.dead_lettered;
    log(LogLevel::kError, "dead-lettered", spec, event, item.attempt, error, now);
    return;
  }
  SLUICE_CRASH_POINT("during-backoff");
  const TimePoint next = add_saturating(now, spec.retry.backoff(item.attempt, event.seq));
  write_delivery(spec.id, event, "pending", item.attempt, next, 0, "retry", error, now, now);
  ++result.retried;
  log(LogLevel::kWarn, "retry scheduled", spec, event, item.attempt, error, now);
}

void Deliverer::record_crash(ConsumerSpec& spec, const Event& event, int attempt,
                             std::size_t company, const std::string& error, TimePoint now,
                             StepResult& result) {
  // Only an event that crashed alone is known to be the one that crashed the process.
  if (attempt >= spec.retry.max_attempts && company == 1) {
    write_delivery(spec.id, event, "dead", attempt, now, 0, "crashed", error, now, now);
    ++result.dead_lettered;
    return;
  }
  // The suspects of a claim are retried in halves until the crashing one is alone, so a poison
  // among n costs O(log n) crashes rather than n transactions. An event's last attempt is made
  // alone, so that it is not dead-lettered for a neighbour's crash; one that crashed in company
  // at its last attempt gets one more, alone.
  const int group = attempt + 1 >= spec.retry.max_attempts
                        ? 1
                        : static_cast<int>(std::min<std::size_t>((company + 1) / 2, INT_MAX));
  write_delivery(spec.id, event, "pending", attempt,
                 add_saturating(now, spec.retry.backoff(attempt, event.seq)), group, "crashed",
                 error, now, now);
  ++result.retried;
}

void Deliverer::hold_back(ConsumerSpec& spec, const ClaimedItem& item, const char* reason) {
  // Due at once (once its key frees), whatever the clock reads: a time here would strand it
  // after the clock is set back, until the clock regained that reading. Never before its own
  // not-before time, though, which may be ahead again after such a step.
  write_delivery(spec.id, item.event, "pending", item.attempt - 1,
                 item.event.not_before.value_or(schema::kDueAtOnce), 0, reason, {}, std::nullopt,
                 schema::kDueAtOnce);
}

void Deliverer::hold_until(ConsumerSpec& spec, const ClaimedItem& item, TimePoint not_before) {
  // Not a backoff: a not-before time is absolute, so it is never re-anchored (scheduled at 0).
  write_delivery(spec.id, item.event, "pending", item.attempt - 1, not_before, 0, "delayed", {},
                 std::nullopt, TimePoint{});
}

void Deliverer::add_counters(const StepResult& result) {
  row_change_.delivered += result.delivered;
  row_change_.retried += result.retried;
  row_change_.snoozed += result.snoozed;
  row_change_.throttled += result.throttled;
}

void Deliverer::settle_delivery(std::int64_t consumer_id, const ClaimedItem& item, TimePoint now,
                                const char* outcome) {
  rewind(settle_delivery_);
  settle_delivery_.bind(1, static_cast<int64_t>(consumer_id));
  settle_delivery_.bind(2, static_cast<int64_t>(item.event.seq));
  settle_delivery_.bind(3, item.attempt);
  settle_delivery_.bind(4, static_cast<int64_t>(to_millis(now)));
  settle_delivery_.bindNoCopy(5, outcome);
  settle_delivery_.exec();
  rewind(delete_delivery_);
  delete_delivery_.bind(1, static_cast<int64_t>(consumer_id));
  delete_delivery_.bind(2, static_cast<int64_t>(item.event.seq));
  delete_delivery_.exec();
}

bool Deliverer::mark_seen(std::int64_t consumer_id, const std::string& event_id, TimePoint now) {
  rewind(insert_inbox_);
  insert_inbox_.bind(1, static_cast<int64_t>(consumer_id));
  insert_inbox_.bindNoCopy(2, event_id);
  insert_inbox_.bind(3, static_cast<int64_t>(to_millis(now)));
  insert_inbox_.exec();
  return db_.getChanges() > 0;
}

void Deliverer::mark_fresh_seen(const ConsumerSpec& spec,
                                const std::vector<const std::string*>& event_ids, TimePoint now,
                                StepResult& result) {
  std::size_t at = 0;
  for (; event_ids.size() - at >= kSeenMarksPerInsert; at += kSeenMarksPerInsert) {
    rewind(insert_inbox_many_);
    insert_inbox_many_.bind(1, static_cast<int64_t>(spec.id));
    insert_inbox_many_.bind(2, static_cast<int64_t>(to_millis(now)));
    for (std::size_t r = 0; r < kSeenMarksPerInsert; ++r)
      insert_inbox_many_.bindNoCopy(static_cast<int>(r) + 3, *event_ids[at + r]);
    insert_inbox_many_.exec();
    // An event seen before was delivered before: only the new marks count, as mark_seen's do.
    result.delivered += db_.getChanges();
  }
  for (; at < event_ids.size(); ++at) {
    if (mark_seen(spec.id, *event_ids[at], now)) ++result.delivered;
  }
}

bool Deliverer::seen(std::int64_t consumer_id, const std::string& event_id) {
  rewind(find_inbox_);
  find_inbox_.bind(1, static_cast<int64_t>(consumer_id));
  find_inbox_.bindNoCopy(2, event_id);
  const bool found = find_inbox_.executeStep();
  rewind(find_inbox_);
  return found;
}

void Deliverer::write_delivery(std::int64_t consumer_id, const Event& event, const char* state,
                               int attempts, TimePoint next_attempt_at, int suspect,
                               const char* reason, const std::string& error,
                               std::optional<TimePoint> failed_at, TimePoint scheduled_at,
                               int logged_attempt) {
  if (std::strcmp(state, "pending") == 0)
    pending_due_in_transaction_ = std::min(pending_due_in_transaction_, next_attempt_at);
  if (defer_rows_ && deferred_count_ == deferred_rows_.size()) deferred_rows_.emplace_back();
  DeliveryRow& row = defer_rows_ ? deferred_rows_[deferred_count_++] : single_row_;
  row.consumer_id = consumer_id;
  row.seq = event.seq;
  row.state = state;
  row.key = &event.key;
  row.attempts = attempts;
  row.next_attempt_at = to_millis(next_attempt_at);
  row.suspect = suspect;
  row.reason = reason;
  row.error = error;
  row.failed_at = failed_at ? std::optional<std::int64_t>(to_millis(*failed_at)) : std::nullopt;
  if (failed_at) {
    write_attempt_log(row.history, logged_attempt != 0 ? logged_attempt : attempts, *failed_at,
                      reason, error);
  }
  row.scheduled_at = to_millis(scheduled_at);
  if (defer_rows_) return;
  rewind(write_delivery_);
  bind_delivery_row(write_delivery_, 0, row);
  write_delivery_.exec();
}

void Deliverer::bind_delivery_row(SQLite::Statement& s, int base, const DeliveryRow& row) {
  s.bind(base + 1, static_cast<int64_t>(row.consumer_id));
  s.bind(base + 2, static_cast<int64_t>(row.seq));
  s.bindNoCopy(base + 3, row.state);
  bind_text_or_null(s, base + 4, *row.key);
  s.bind(base + 5, row.attempts);
  s.bind(base + 6, static_cast<int64_t>(row.next_attempt_at));
  s.bind(base + 7);  // claim_id: rows are claimed only by mark_claimed_
  s.bind(base + 8, row.suspect);
  s.bindNoCopy(base + 9, row.reason);
  bind_text_or_null(s, base + 10, row.error);
  if (row.failed_at) {
    s.bind(base + 11, static_cast<int64_t>(*row.failed_at));
    s.bindNoCopy(base + 13, row.history);
  } else {
    s.bind(base + 11);
    s.bind(base + 13);
  }
  s.bind(base + 12, static_cast<int64_t>(row.scheduled_at));
}

void Deliverer::write_deferred_rows() {
  defer_rows_ = false;
  std::size_t at = 0;
  for (; deferred_count_ - at >= kDeliveryRowsPerInsert; at += kDeliveryRowsPerInsert) {
    rewind(write_deliveries_);
    for (std::size_t r = 0; r < kDeliveryRowsPerInsert; ++r)
      bind_delivery_row(write_deliveries_, static_cast<int>(r) * kDeliveryRowParams,
                        deferred_rows_[at + r]);
    write_deliveries_.exec();
  }
  for (; at < deferred_count_; ++at) {
    rewind(write_delivery_);
    bind_delivery_row(write_delivery_, 0, deferred_rows_[at]);
    write_delivery_.exec();
  }
  deferred_count_ = 0;
}

void Deliverer::release(ConsumerSpec& spec, std::optional<Claim>& in_hand) {
  if (!in_hand) return;
  WriteTransaction tx = begin_write();
  try {
    claims_.check_held(in_hand->id);
  } catch (const ClaimLost&) {
    // Recovered by another worker: nothing of it is this one's to give back.
    recycle(*in_hand);
    in_hand.reset();
    return;
  }
  for (std::size_t i = in_hand->next; i < in_hand->items.size(); ++i) {
    hold_back(spec, in_hand->items[i], "released");
  }
  claims_.close(in_hand->id);
  tx.commit();
  recycle(*in_hand);
  in_hand.reset();
}

void Deliverer::recycle(Claim& finished) {
  finished.items.clear();
  spare_items_ = std::move(finished.items);
}

void Deliverer::log(LogLevel level, const char* message, const ConsumerSpec& spec,
                    const Event& event, int attempt, const std::string& error, TimePoint now) {
  if (!options_.log) return;
  options_.log->write(level, message,
                      {{"event_id", event.id},
                       {"consumer", spec.name},
                       {"topic", event.topic},
                       {"attempt", attempt},
                       {"error", error},
                       {"lag_ms", (now - event.created_at).count()}});
}

}  // namespace sluice
