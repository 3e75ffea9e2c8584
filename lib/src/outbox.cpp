#include "sluice/outbox.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "bind_text.hpp"
#include "commit_signal.hpp"
#include "connection_cache.hpp"
#include "connection_clock.hpp"
#include "enqueue_in_statement.hpp"
#include "event_codec.hpp"
#include "exclusive_use.hpp"
#include "rewind.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "trace_context.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

constexpr int kColumns = 9;
// A batch goes in statements of this many rows: each statement costs SQLite about as much again
// as the rows it writes (cursors opened and freed, sqlite_sequence updated), so one row per
// statement paid that 1,000 times for 1,000 events. 32 rows wrote an event in half the
// instructions of one; more rows gain little.
constexpr std::size_t kManyRows = 32;
constexpr std::size_t kFewRows = 8;

std::string insert_sql(std::size_t rows) {
  std::string sql =
      "INSERT INTO sluice_events (id, topic, payload, headers, key, dedup_key, not_before, "
      "created_at, version) VALUES ";
  for (std::size_t r = 0; r < rows; ++r)
    sql += r == 0 ? "(?,?,?,?,?,?,?,?,?)" : ",(?,?,?,?,?,?,?,?,?)";
  return sql + " ON CONFLICT DO NOTHING";
}

void require_transaction(SQLite::Database& db, const char* operation) {
  if (!in_transaction(db)) {
    throw TransactionError(std::string("sluice: ") + operation +
                           ": no transaction is open on the connection; enqueue must run "
                           "inside the caller's transaction (or use Outbox::enqueue_now)");
  }
}

void require_own_id(const NewEvent& event) {
  if (event.id.empty()) {
    throw InvalidArgument("sluice: receive: an event from outside must carry its own ID");
  }
}

}  // namespace

// Writes events on one connection with statements prepared once: an Outbox's, or the one
// enqueue() keeps for a connection. Outside the anonymous namespace: Outbox::Impl, a class of
// the public header, derives from it.
struct EventWriter : ConnectionCached {
  EventWriter(SQLite::Database& connection, Options opts)
      : db(connection),
        options(std::move(opts)),
        clock(clock_for(db, options)),
        insert(db, insert_sql(1)),
        find_by_id(db, "SELECT seq, topic, dedup_key FROM sluice_events WHERE id = ?"),
        find_by_dedup_key(db,
                          "SELECT seq, id FROM sluice_events WHERE topic = ? AND dedup_key = ? "
                          "AND dedup_key IS NOT NULL") {}

  // Inserts a validated event inside the open transaction.
  EnqueueResult insert_event(const NewEvent& event) {
    const TimePoint now = clock->now();
    std::string generated_id;
    if (event.id.empty()) generated_id = generate_event_id(now);
    const std::string& id = event.id.empty() ? generated_id : event.id;
    const std::string headers = encode_headers(stored_headers(event, trace_headers));
    rewind(insert);
    bind_row(insert, 0, event, id, headers, now);
    insert.exec();
    if (db.getChanges() > 0) {
      return {EnqueueResult::Status::kStored, id, db.getLastInsertRowid()};
    }
    return find_duplicate(id, event);
  }

  // Inserts validated events in order inside the open transaction: insert_event() for each, with
  // the same results, in statements of many rows.
  std::vector<EnqueueResult> insert_events(const std::vector<NewEvent>& events) {
    std::vector<EnqueueResult> results(events.size());
    std::size_t at = 0;
    while (at < events.size()) {
      const std::size_t left = events.size() - at;
      if (left >= kManyRows) {
        insert_rows(prepared(insert_many, kManyRows), events, at, kManyRows, results);
        at += kManyRows;
      } else if (left >= kFewRows) {
        insert_rows(prepared(insert_few, kFewRows), events, at, kFewRows, results);
        at += kFewRows;
      } else {
        results[at] = insert_event(events[at]);
        ++at;
      }
    }
    return results;
  }

  // Prepared on first use: most outboxes never take a batch.
  SQLite::Statement& prepared(std::optional<SQLite::Statement>& statement, std::size_t rows) {
    if (!statement) statement.emplace(db, insert_sql(rows));
    return *statement;
  }

  // events[first, first + rows) with the one statement `statement` of `rows` rows.
  void insert_rows(SQLite::Statement& statement, const std::vector<NewEvent>& events,
                   std::size_t first, std::size_t rows, std::vector<EnqueueResult>& results) {
    const TimePoint now = clock->now();
    row_ids.resize(rows);
    row_headers.resize(rows);
    rewind(statement);
    for (std::size_t r = 0; r < rows; ++r) {
      const NewEvent& event = events[first + r];
      row_ids[r] = event.id.empty() ? generate_event_id(now) : event.id;
      row_headers[r] = encode_headers(stored_headers(event, trace_headers));
      bind_row(statement, static_cast<int>(r) * kColumns, event, row_ids[r], row_headers[r], now);
    }
    statement.exec();
    const auto stored = static_cast<std::size_t>(db.getChanges());
    if (stored == rows) {
      // Without a conflict the rows took consecutive seqs, the last one's the last rowid.
      const std::int64_t last = db.getLastInsertRowid();
      for (std::size_t r = 0; r < rows; ++r) {
        results[first + r] = {EnqueueResult::Status::kStored, std::move(row_ids[r]),
                              last - static_cast<std::int64_t>(rows - 1 - r)};
      }
      return;
    }
    resolve_conflicts(events, first, rows, stored, results);
  }

  // After a statement that stored only `stored` of its rows: which ones, and what the others
  // duplicated. Each stored row is found by its ID, and AUTOINCREMENT gave it a seq above every
  // older row's, so the stored rows are the `stored` highest seqs the IDs find; of two rows with
  // one ID, the first was stored, as one statement per row would have done, unless the first
  // was refused for its dedup key: a row found by its ID is this row only if the topic and dedup
  // key stored are its own.
  void resolve_conflicts(const std::vector<NewEvent>& events, std::size_t first, std::size_t rows,
                         std::size_t stored, std::vector<EnqueueResult>& results) {
    std::vector<std::int64_t> found(rows, 0);
    for (std::size_t r = 0; r < rows; ++r) {
      rewind(find_by_id);
      find_by_id.bindNoCopy(1, row_ids[r]);
      if (find_by_id.executeStep() &&
          find_by_id.getColumn(1).getString() == events[first + r].topic &&
          find_by_id.getColumn(2).getString() == events[first + r].dedup_key) {
        found[r] = find_by_id.getColumn(0).getInt64();
      }
      rewind(find_by_id);
    }
    std::vector<std::int64_t> fresh(found);
    std::sort(fresh.begin(), fresh.end(), std::greater<>());
    fresh.erase(std::unique(fresh.begin(), fresh.end()), fresh.end());
    fresh.resize(std::min(stored, fresh.size()));
    // seq -> the row of this statement that stored it
    std::map<std::int64_t, std::size_t> stored_by;
    for (std::size_t r = 0; r < rows; ++r) {
      const auto taken = std::find(fresh.begin(), fresh.end(), found[r]);
      if (found[r] == 0 || taken == fresh.end()) continue;
      fresh.erase(taken);
      stored_by[found[r]] = r;
    }
    for (std::size_t r = 0; r < rows; ++r) {
      if (found[r] != 0 && stored_by.count(found[r]) > 0 && stored_by[found[r]] == r) {
        results[first + r] = {EnqueueResult::Status::kStored, row_ids[r], found[r]};
        continue;
      }
      // An ID a later row of the statement stored was free when this row came: what refused
      // this row was its dedup key.
      const auto later = stored_by.find(seq_of(row_ids[r]));
      const bool id_free_then = later != stored_by.end() && later->second > r;
      results[first + r] = find_duplicate(row_ids[r], events[first + r], !id_free_then);
    }
  }

  std::int64_t seq_of(const std::string& id) {
    rewind(find_by_id);
    find_by_id.bindNoCopy(1, id);
    const std::int64_t seq = find_by_id.executeStep() ? find_by_id.getColumn(0).getInt64() : 0;
    rewind(find_by_id);
    return seq;
  }

  // Binds `event` as the row whose first parameter follows `offset`.
  void bind_row(SQLite::Statement& statement, int offset, const NewEvent& event,
                const std::string& id, const std::string& headers, TimePoint now) {
    statement.bindNoCopy(offset + 1, id);
    statement.bindNoCopy(offset + 2, event.topic);
    statement.bindNoCopy(offset + 3, event.payload);
    bind_text_or_null(statement, offset + 4, headers);
    bind_text_or_null(statement, offset + 5, event.key);
    bind_text_or_null(statement, offset + 6, event.dedup_key);
    if (event.not_before) {
      statement.bind(offset + 7,
                     static_cast<int64_t>(event.not_before->time_since_epoch().count()));
    } else {
      statement.bind(offset + 7);
    }
    statement.bind(offset + 8,
                   static_cast<int64_t>(event.created_at.value_or(now).time_since_epoch().count()));
    statement.bind(offset + 9, event.version);
  }

  // What refused `event` stored as `id`: an event with its ID (when `by_id`), else one with its
  // dedup key in its topic.
  EnqueueResult find_duplicate(const std::string& id, const NewEvent& event, bool by_id = true) {
    if (const std::int64_t seq = by_id ? seq_of(id) : 0; seq != 0) {
      return {EnqueueResult::Status::kDuplicateId, id, seq};
    }
    rewind(find_by_dedup_key);
    find_by_dedup_key.bindNoCopy(1, event.topic);
    find_by_dedup_key.bindNoCopy(2, event.dedup_key);
    if (find_by_dedup_key.executeStep()) {
      EnqueueResult duplicate{EnqueueResult::Status::kDuplicateDedupKey,
                              find_by_dedup_key.getColumn(1).getString(),
                              find_by_dedup_key.getColumn(0).getInt64()};
      rewind(find_by_dedup_key);
      return duplicate;
    }
    throw Error("sluice: enqueue: the event was neither stored nor found as a duplicate");
  }

  SQLite::Database& db;
  Options options;
  std::shared_ptr<Clock> clock;
  SQLite::Statement insert;
  std::optional<SQLite::Statement> insert_few;
  std::optional<SQLite::Statement> insert_many;
  SQLite::Statement find_by_id;
  SQLite::Statement find_by_dedup_key;
  // What the rows of a many-row statement bind, kept until it has run; reused.
  std::vector<std::string> row_ids;
  std::vector<std::string> row_headers;
  Headers trace_headers;  // an event's headers with its trace context, see stored_headers()
  // Its user: the Outbox's caller, or for enqueue() the thread using the connection; a trigger
  // that enqueues re-enters on that thread.
  ExclusiveUse use;
};

namespace {

// The key of enqueue()'s writer among a connection's cached objects.
const char kWriterKey = 0;

}  // namespace

struct Outbox::Impl : EventWriter {
  using EventWriter::EventWriter;
};

Outbox::Outbox(SQLite::Database& db, Options options) {
  ensure_schema(db);
  impl_ = guarded("prepare outbox", [&] { return std::make_unique<Impl>(db, std::move(options)); });
  CommitSignal::watch(db);
}

Outbox::~Outbox() = default;

EnqueueResult Outbox::enqueue(const NewEvent& event) {
  ExclusiveUse::Scope use(impl_->use, "sluice: Outbox::enqueue");
  require_transaction(impl_->db, "enqueue");
  const std::optional<NewEvent> traced = with_current_trace(event, impl_->options);
  const NewEvent& stored = traced ? *traced : event;
  validate_new_event(stored, impl_->options.max_payload_bytes);
  return guarded("enqueue", [&] { return impl_->insert_event(stored); });
}

std::vector<EnqueueResult> Outbox::enqueue_batch(const std::vector<NewEvent>& events) {
  ExclusiveUse::Scope use(impl_->use, "sluice: Outbox::enqueue_batch");
  require_transaction(impl_->db, "enqueue batch");
  // Copied only when the app's hook supplies a trace context.
  std::vector<NewEvent> traced;
  if (impl_->options.current_trace_context) {
    traced.reserve(events.size());
    for (const NewEvent& event : events) {
      std::optional<NewEvent> with = with_current_trace(event, impl_->options);
      traced.push_back(with ? std::move(*with) : event);
    }
  }
  const std::vector<NewEvent>& stored = traced.empty() ? events : traced;
  for (const NewEvent& event : stored) validate_new_event(event, impl_->options.max_payload_bytes);
  return guarded("enqueue batch", [&] { return impl_->insert_events(stored); });
}

EnqueueResult Outbox::enqueue_now(const NewEvent& event) {
  ExclusiveUse::Scope use(impl_->use, "sluice: Outbox::enqueue_now");
  const std::optional<NewEvent> traced = with_current_trace(event, impl_->options);
  const NewEvent& stored = traced ? *traced : event;
  validate_new_event(stored, impl_->options.max_payload_bytes);
  return guarded("enqueue", [&] {
    WriteTransaction tx(impl_->db);
    EnqueueResult result = impl_->insert_event(stored);
    tx.commit();
    return result;
  });
}

EnqueueResult Outbox::receive(const NewEvent& event) {
  ExclusiveUse::Scope use(impl_->use, "sluice: Outbox::receive");
  require_own_id(event);
  validate_new_event(event, impl_->options.max_payload_bytes);
  return guarded("receive", [&] {
    if (in_transaction(impl_->db)) return impl_->insert_event(event);
    WriteTransaction tx(impl_->db);
    EnqueueResult result = impl_->insert_event(event);
    tx.commit();
    return result;
  });
}

std::vector<EnqueueResult> Outbox::receive_batch(const std::vector<NewEvent>& events) {
  ExclusiveUse::Scope use(impl_->use, "sluice: Outbox::receive_batch");
  for (const NewEvent& event : events) {
    require_own_id(event);
    validate_new_event(event, impl_->options.max_payload_bytes);
  }
  return guarded("receive batch", [&] {
    if (in_transaction(impl_->db)) return impl_->insert_events(events);
    WriteTransaction tx(impl_->db);
    std::vector<EnqueueResult> results = impl_->insert_events(events);
    tx.commit();
    return results;
  });
}

EnqueueResult enqueue(SQLite::Database& db, const NewEvent& event, const Options& options) {
  require_transaction(db, "enqueue");
  return enqueue_in_statement(db, event, options);
}

EnqueueResult enqueue_in_statement(SQLite::Database& db, const NewEvent& given,
                                   const Options& options) {
  const std::optional<NewEvent> traced = with_current_trace(given, options);
  const NewEvent& event = traced ? *traced : given;
  validate_new_event(event, options.max_payload_bytes);
  return guarded("enqueue", [&] {
    auto& writer = static_cast<EventWriter&>(connection_cached(db, &kWriterKey, [&] {
      if (stored_schema_version(db) != schema_version()) {
        throw TransactionError(
            "sluice: enqueue: the connection's file has no current sluice schema; open it with "
            "sluice::open_database (or call sluice::ensure_schema outside a transaction) first");
      }
      return std::make_unique<EventWriter>(db, Options{});
    }));
    ExclusiveUse::Scope use(writer.use, "sluice: enqueue");
    // A trigger on sluice_events that enqueues (the extension's sluice_enqueue) calls this again
    // while the writer's insert statement runs: resetting that statement under it lost the
    // outer event's failure, so the nested call prepares a statement of its own.
    if (use.nested()) {
      EventWriter nested(db, Options{});
      nested.clock = clock_for(db, options);
      return nested.insert_event(event);
    }
    writer.clock = clock_for(db, options);
    return writer.insert_event(event);
  });
}

}  // namespace sluice
