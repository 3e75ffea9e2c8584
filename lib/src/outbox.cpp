#include "sluice/outbox.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include "commit_signal.hpp"
#include "event_codec.hpp"
#include "rewind.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "write_transaction.hpp"

namespace sluice {

struct Outbox::Impl {
  Impl(SQLite::Database& connection, Options opts)
      : db(connection),
        options(std::move(opts)),
        clock(options.clock ? options.clock : system_clock()),
        insert(db,
               "INSERT INTO sluice_events (id, topic, payload, headers, key, dedup_key, "
               "not_before, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"),
        find_by_id(db, "SELECT seq FROM sluice_events WHERE id = ?"),
        find_by_dedup_key(db,
                          "SELECT seq, id FROM sluice_events WHERE topic = ? AND dedup_key = ? "
                          "AND dedup_key IS NOT NULL") {}

  // Inserts a validated event inside the open transaction.
  EnqueueResult insert_event(const NewEvent& event) {
    const TimePoint now = clock->now();
    std::string generated_id;
    if (event.id.empty()) generated_id = generate_event_id(now);
    const std::string& id = event.id.empty() ? generated_id : event.id;
    const std::string headers = encode_headers(event.headers);
    rewind(insert);
    insert.bindNoCopy(1, id);
    insert.bindNoCopy(2, event.topic);
    insert.bindNoCopy(3, event.payload);
    bind_text_or_null(4, headers);
    bind_text_or_null(5, event.key);
    bind_text_or_null(6, event.dedup_key);
    if (event.not_before) {
      insert.bind(7, static_cast<int64_t>(event.not_before->time_since_epoch().count()));
    } else {
      insert.bind(7);
    }
    insert.bind(8, static_cast<int64_t>(now.time_since_epoch().count()));
    insert.exec();
    if (db.getChanges() > 0) {
      return {EnqueueResult::Status::kStored, id, db.getLastInsertRowid()};
    }
    return find_duplicate(id, event);
  }

  EnqueueResult find_duplicate(const std::string& id, const NewEvent& event) {
    rewind(find_by_id);
    find_by_id.bindNoCopy(1, id);
    if (find_by_id.executeStep()) {
      const std::int64_t seq = find_by_id.getColumn(0).getInt64();
      rewind(find_by_id);
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

  void bind_text_or_null(int index, const std::string& value) {
    if (value.empty()) {
      insert.bind(index);
    } else {
      insert.bindNoCopy(index, value);
    }
  }

  void require_transaction(const char* operation) {
    if (!in_transaction(db)) {
      throw TransactionError(std::string("sluice: ") + operation +
                             ": no transaction is open on the connection; enqueue must run "
                             "inside the caller's transaction (or use enqueue_now)");
    }
  }

  SQLite::Database& db;
  Options options;
  std::shared_ptr<Clock> clock;
  SQLite::Statement insert;
  SQLite::Statement find_by_id;
  SQLite::Statement find_by_dedup_key;
};

Outbox::Outbox(SQLite::Database& db, Options options) {
  ensure_schema(db);
  impl_ = guarded("prepare outbox", [&] { return std::make_unique<Impl>(db, std::move(options)); });
  CommitSignal::watch(db);
}

Outbox::~Outbox() = default;

EnqueueResult Outbox::enqueue(const NewEvent& event) {
  impl_->require_transaction("enqueue");
  validate_new_event(event, impl_->options.max_payload_bytes);
  return guarded("enqueue", [&] { return impl_->insert_event(event); });
}

std::vector<EnqueueResult> Outbox::enqueue_batch(const std::vector<NewEvent>& events) {
  impl_->require_transaction("enqueue batch");
  for (const NewEvent& event : events) validate_new_event(event, impl_->options.max_payload_bytes);
  return guarded("enqueue batch", [&] {
    std::vector<EnqueueResult> results;
    results.reserve(events.size());
    for (const NewEvent& event : events) results.push_back(impl_->insert_event(event));
    return results;
  });
}

EnqueueResult Outbox::enqueue_now(const NewEvent& event) {
  validate_new_event(event, impl_->options.max_payload_bytes);
  return guarded("enqueue", [&] {
    WriteTransaction tx(impl_->db);
    EnqueueResult result = impl_->insert_event(event);
    tx.commit();
    return result;
  });
}

EnqueueResult Outbox::receive(const NewEvent& event) {
  if (event.id.empty()) {
    throw InvalidArgument("sluice: receive: an event from outside must carry its own ID");
  }
  validate_new_event(event, impl_->options.max_payload_bytes);
  return guarded("receive", [&] {
    if (in_transaction(impl_->db)) return impl_->insert_event(event);
    WriteTransaction tx(impl_->db);
    EnqueueResult result = impl_->insert_event(event);
    tx.commit();
    return result;
  });
}

}  // namespace sluice
