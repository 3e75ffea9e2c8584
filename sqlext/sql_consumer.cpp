#include "sql_consumer.hpp"

#include <SQLiteCpp/Statement.h>

#include "attempt_log.hpp"
#include "breaker_state.hpp"
#include "consumer_registry.hpp"
#include "json_string.hpp"
#include "saturating_time.hpp"
#include "schema.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "throttle_sql.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice::sqlext {
namespace {

void append_text_or_null(std::string& out, const std::string& text) {
  if (text.empty()) {
    out += "null";
  } else {
    append_json_string(out, text);
  }
}

// Written by hand, members in the order the docs list them: the payload goes in as the text that
// was stored (validated JSON), byte for byte, where a parse and dump would round numbers past
// 64 bits and rewrite escapes.
void append_event(std::string& out, const ClaimedItem& item) {
  const Event& e = item.event;
  out += "{\"id\":";
  append_json_string(out, e.id);
  out += ",\"seq\":" + std::to_string(e.seq) + ",\"topic\":";
  append_json_string(out, e.topic);
  out += ",\"payload\":";
  out += e.payload;
  out += ",\"headers\":{";
  for (const auto& [name, value] : e.headers) {
    if (out.back() != '{') out += ',';
    append_json_string(out, name);
    out += ':';
    append_json_string(out, value);
  }
  out += "},\"key\":";
  append_text_or_null(out, e.key);
  out += ",\"dedup_key\":";
  append_text_or_null(out, e.dedup_key);
  out += ",\"not_before\":";
  out += e.not_before ? std::to_string(to_millis(*e.not_before)) : "null";
  out += ",\"created_at\":" + std::to_string(to_millis(e.created_at));
  out += ",\"version\":" + std::to_string(e.version);
  out += ",\"attempt\":" + std::to_string(item.attempt) + "}";
}

}  // namespace

SqlConsumer::SqlConsumer(SQLite::Database& db, std::string name, std::shared_ptr<Clock> clock)
    : db_(db), name_(std::move(name)), clock_(std::move(clock)) {
  spec_.name = name_;
  spec_.sql_claimer = true;
}

void SqlConsumer::load_spec() {
  SQLite::Statement row(db_,
                        "SELECT id, ordered, max_attempts, initial_backoff_ms, max_backoff_ms, "
                        "backoff_multiplier, backoff_jitter, backoff_seed, breaker_failures, "
                        "breaker_cool_down_ms, breaker_max_cool_down_ms FROM sluice_consumers "
                        "WHERE name = ?");
  row.bind(1, name_);
  if (!row.executeStep()) {
    throw NotFound("sluice: no consumer named '" + name_ +
                   "': subscribe it first with sluice_subscribe(consumer, topic)");
  }
  spec_.id = row.getColumn(0).getInt64();
  if (row.getColumn(1).getInt() != 0) {
    throw InvalidArgument("sluice: consumer '" + name_ +
                          "' is ordered; ordered consumers cannot be driven from SQL yet");
  }
  // Retried as the consumer's C++ workers retry it: by the policy the file records.
  spec_.retry = recorded_retry_policy(row, 2);
  spec_.options.retry = spec_.retry;
  // Its breaker, heeded by the claim (none while open, one event while half-open) and moved by
  // sluice_done and sluice_fail: an SQL claimer of a consumer with one must not go around it.
  spec_.options.breaker.reset();
  if (!row.isColumnNull(8)) {
    spec_.options.breaker =
        Breaker{row.getColumn(8).getInt(), Duration(row.getColumn(9).getInt64()),
                Duration(row.getColumn(10).getInt64())};
  }
  // The engine claims only topics with a handler here: from SQL, every subscribed one. The
  // handlers themselves are never called, the app handles the events.
  spec_.handlers.clear();
  SQLite::Statement topics(db_, "SELECT topic FROM sluice_subscriptions WHERE consumer_id = ?");
  topics.bind(1, static_cast<int64_t>(spec_.id));
  while (topics.executeStep()) {
    spec_.handlers[topics.getColumn(0).getString()] = [](const Event&, Context&) {};
  }
}

std::string SqlConsumer::claim(int limit) {
  if (limit < 1) throw InvalidArgument("sluice: sluice_claim: the limit must be at least 1");
  if (in_transaction(db_)) {
    throw TransactionError(
        "sluice: sluice_claim commits its claim in a transaction of its own: call it outside "
        "BEGIN ... COMMIT");
  }
  release();
  guarded("claim", [&] { load_spec(); });
  if (!options_ || options_->batch_size != limit) {
    deliverer_.reset();
    options_ = Options{};
    options_->batch_size = limit;
    options_->clock = clock_;
    deliverer_.emplace(db_, *options_, "sql");
    std::string names = "[";
    append_json_string(names, name_);
    deliverer_->claims().set_consumers(names + "]");
  }
  guarded("claim", [&] { deliverer_->step(spec_, claim_, false); });
  std::string events = "[";
  if (claim_) {
    for (const ClaimedItem& item : claim_->items) {
      if (events.size() > 1) events += ',';
      append_event(events, item);
    }
  }
  return events + "]";
}

const ClaimedItem& SqlConsumer::unfinished_item(const std::string& event_id,
                                                const char* operation) {
  const ClaimedItem* found = nullptr;
  if (claim_) {
    for (const ClaimedItem& item : claim_->items) {
      if (item.event.id == event_id) found = &item;
    }
  }
  if (found == nullptr) {
    throw NotFound(std::string("sluice: ") + operation + ": event '" + event_id +
                   "' is not in this connection's claim for consumer '" + name_ +
                   "' (claim it with sluice_claim first)");
  }
  if (finished(*found)) {
    throw InvalidArgument(std::string("sluice: ") + operation + ": event '" + event_id +
                          "' of consumer '" + name_ + "' was finished already");
  }
  return *found;
}

bool SqlConsumer::finished(const ClaimedItem& item) {
  // What crash recovery counts as unfinished (deliverer.cpp): a fresh event neither seen nor
  // given a delivery row, a claimed row still naming the claim.
  SQLite::Statement query(
      db_, item.fresh
               ? "SELECT EXISTS (SELECT 1 FROM sluice_inbox WHERE consumer_id = ?1 AND "
                 "event_id = ?2) OR EXISTS (SELECT 1 FROM sluice_deliveries WHERE consumer_id = "
                 "?1 AND event_seq = ?3)"
               : "SELECT NOT EXISTS (SELECT 1 FROM sluice_deliveries WHERE consumer_id = ?1 AND "
                 "event_seq = ?3 AND state = 'claimed' AND claim_id = ?4)");
  query.bind(1, static_cast<int64_t>(spec_.id));
  query.bind(2, item.event.id);
  query.bind(3, static_cast<int64_t>(item.event.seq));
  if (!item.fresh) query.bind(4, static_cast<int64_t>(claim_->id));
  query.executeStep();
  return query.getColumn(0).getInt() != 0;
}

void SqlConsumer::done(const std::string& event_id) {
  guarded("sluice_done", [&] {
    const ClaimedItem& item = unfinished_item(event_id, "sluice_done");
    check_held("sluice_done");
    const TimePoint now = clock_->now();
    SQLite::Statement seen(db_,
                           "INSERT INTO sluice_inbox (consumer_id, event_id, delivered_at) "
                           "VALUES (?, ?, ?) ON CONFLICT DO NOTHING");
    seen.bind(1, static_cast<int64_t>(spec_.id));
    seen.bind(2, item.event.id);
    seen.bind(3, static_cast<int64_t>(to_millis(now)));
    seen.exec();
    if (db_.getChanges() == 0) {
      throw InvalidArgument("sluice: sluice_done: event '" + event_id + "' was seen by consumer '" +
                            name_ + "' already: roll back this transaction's writes");
    }
    tally_breaker(true, now);
    if (!item.fresh) {
      // Its history settles into sluice_attempts with the outcome that ended it.
      SQLite::Statement settle(
          db_,
          "INSERT INTO sluice_attempts (consumer_id, event_seq, attempt, at, outcome, earlier) "
          "SELECT ?1, ?2, ?3, ?4, 'delivered', history FROM sluice_deliveries WHERE "
          "consumer_id = ?1 AND event_seq = ?2");
      settle.bind(1, static_cast<int64_t>(spec_.id));
      settle.bind(2, static_cast<int64_t>(item.event.seq));
      settle.bind(3, item.attempt);
      settle.bind(4, static_cast<int64_t>(to_millis(now)));
      settle.exec();
      SQLite::Statement remove(
          db_, "DELETE FROM sluice_deliveries WHERE consumer_id = ? AND event_seq = ?");
      remove.bind(1, static_cast<int64_t>(spec_.id));
      remove.bind(2, static_cast<int64_t>(item.event.seq));
      remove.exec();
    }
    SQLite::Statement count(
        db_, "UPDATE sluice_consumers SET delivered_total = delivered_total + 1 WHERE id = ?");
    count.bind(1, static_cast<int64_t>(spec_.id));
    count.exec();
    drop_claim_if_finished();
  });
}

std::string SqlConsumer::fail(const std::string& event_id, const std::string& error,
                              bool permanent) {
  return guarded("sluice_fail", [&] {
    const ClaimedItem& item = unfinished_item(event_id, "sluice_fail");
    check_held("sluice_fail");
    const TimePoint now = clock_->now();
    const char* reason = permanent                                  ? "permanent"
                         : item.attempt >= spec_.retry.max_attempts ? "exhausted"
                                                                    : nullptr;
    if (!permanent && spec_.options.breaker) {
      tally_breaker(false, now);
      if (claim_->probe) {
        // As a worker's failed probe: logged, but no attempt spent; the breaker, open again,
        // holds the event back however long the outage lasts.
        write_delivery(item, "pending", item.attempt - 1, now, "retry", error, now, now);
        drop_claim_if_finished();
        return std::string("pending");
      }
    }
    if (reason != nullptr) {
      write_delivery(item, "dead", item.attempt, now, reason, error, now, now);
      drop_claim_if_finished();
      return std::string("dead");
    }
    write_delivery(item, "pending", item.attempt,
                   add_saturating(now, spec_.retry.backoff(item.attempt, item.event.seq)), "retry",
                   error, now, now);
    SQLite::Statement count(
        db_, "UPDATE sluice_consumers SET retries_total = retries_total + 1 WHERE id = ?");
    count.bind(1, static_cast<int64_t>(spec_.id));
    count.exec();
    drop_claim_if_finished();
    return std::string("pending");
  });
}

std::string SqlConsumer::throttle(const std::string& event_id, Duration delay,
                                  const std::string& reason) {
  return guarded("sluice_throttle", [&] {
    const ClaimedItem& item = unfinished_item(event_id, "sluice_throttle");
    check_held("sluice_throttle");
    const TimePoint now = system_clock()->now();
    // Due again at once: the consumer's pause, not the row, holds it back.
    write_delivery(item, "pending", item.attempt - 1, now, "throttled", {}, std::nullopt, now);
    SQLite::Statement pause(db_, kThrottleConsumerSql);
    pause.bind(1, static_cast<int64_t>(spec_.id));
    pause.bind(2, static_cast<int64_t>(to_millis(now)));
    pause.bind(3, static_cast<int64_t>(to_millis(add_saturating(now, delay))));
    if (reason.empty()) {
      pause.bind(4);
    } else {
      pause.bind(4, reason);
    }
    pause.bind(5, static_cast<int64_t>(1));
    pause.exec();
    drop_claim_if_finished();
    return std::string("pending");
  });
}

int SqlConsumer::release() {
  if (!claim_) return 0;
  int released = 0;
  guarded("release", [&] {
    WriteTransaction tx(db_);
    try {
      deliverer_->claims().check_held(claim_->id);
    } catch (const ClaimLost&) {
      return;  // recovered by another worker: nothing of it is this connection's to give back
    }
    for (const ClaimedItem& item : claim_->items) {
      if (finished(item)) continue;
      // As the engine's hold_back: due at once (or at its not-before time), no attempt spent.
      write_delivery(item, "pending", item.attempt - 1,
                     item.event.not_before.value_or(schema::kDueAtOnce), "released", {},
                     std::nullopt, schema::kDueAtOnce);
      ++released;
    }
    deliverer_->claims().close(claim_->id);
    tx.commit();
  });
  claim_.reset();
  return released;
}

void SqlConsumer::tally_breaker(bool success, TimePoint now) {
  if (!spec_.options.breaker) return;
  BreakerTally tally;
  tally.success = success;
  tally.trailing_failures = success ? 0 : 1;
  tally.probe = claim_->probe;
  tally.before = read_breaker_state(db_, spec_.id);
  write_breaker_state(db_, spec_.id, name_, *spec_.options.breaker, tally, now, *options_);
}

void SqlConsumer::drop_claim_if_finished() {
  // From the end: an app finishes its events in order, so the last one is the one left.
  for (auto item = claim_->items.rbegin(); item != claim_->items.rend(); ++item) {
    if (!finished(*item)) return;
  }
  deliverer_->claims().close(claim_->id);
}

void SqlConsumer::check_held(const char* operation) {
  try {
    deliverer_->claims().check_held(claim_->id);
  } catch (const ClaimLost& lost) {
    throw InvalidArgument(std::string("sluice: ") + operation + ": " + lost.what() +
                          ": roll back this transaction's writes and claim again");
  }
}

void SqlConsumer::write_delivery(const ClaimedItem& item, const char* state, int attempts,
                                 TimePoint next_attempt_at, const char* reason,
                                 const std::string& error, std::optional<TimePoint> failed_at,
                                 TimePoint scheduled_at) {
  // The engine's upsert of a delivery row (Deliverer::write_delivery): a failure's entry is
  // appended to the row's attempt log.
  SQLite::Statement s(
      db_,
      "INSERT INTO sluice_deliveries (consumer_id, event_seq, state, key, attempts, "
      "next_attempt_at, claim_id, suspect, reason, last_error, first_failed_at, last_failed_at, "
      "scheduled_at, history) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, 0, ?7, ?8, ?9, ?9, ?10, ?11) "
      "ON CONFLICT (consumer_id, event_seq) DO UPDATE SET state = excluded.state, "
      "attempts = excluded.attempts, next_attempt_at = excluded.next_attempt_at, "
      "scheduled_at = excluded.scheduled_at, claim_id = NULL, suspect = 0, "
      "reason = excluded.reason, last_error = coalesce(excluded.last_error, last_error), "
      "first_failed_at = coalesce(first_failed_at, excluded.first_failed_at), "
      "last_failed_at = coalesce(excluded.last_failed_at, last_failed_at), "
      "history = CASE WHEN ?11 IS NULL THEN history WHEN history IS NULL THEN excluded.history "
      "ELSE json_insert(history, '$[#]', json_extract(?11, '$[0]')) END");
  s.bind(1, static_cast<int64_t>(spec_.id));
  s.bind(2, static_cast<int64_t>(item.event.seq));
  s.bind(3, state);
  if (item.event.key.empty()) {
    s.bind(4);
  } else {
    s.bind(4, item.event.key);
  }
  s.bind(5, attempts);
  s.bind(6, static_cast<int64_t>(to_millis(next_attempt_at)));
  s.bind(7, reason);
  if (failed_at) {
    s.bind(8, error);
    s.bind(9, static_cast<int64_t>(to_millis(*failed_at)));
    std::string history;
    write_attempt_log(history, attempts, *failed_at, reason, error);
    s.bind(11, history);
  } else {
    s.bind(8);
    s.bind(9);
    s.bind(11);
  }
  s.bind(10, static_cast<int64_t>(to_millis(scheduled_at)));
  s.exec();
}

}  // namespace sluice::sqlext
