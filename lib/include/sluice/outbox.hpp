// The transactional outbox: events enqueued in the same transaction as the app's own writes.
#pragma once

#include <SQLiteCpp/Database.h>

#include <memory>
#include <vector>

#include "sluice/event.hpp"
#include "sluice/options.hpp"

namespace sluice {

// Not thread-safe: bound to one connection and used where that connection is used; a call from a
// second thread while one runs throws InvalidArgument and does nothing. Must not outlive the
// connection. Keeps its prepared statements for the connection's lifetime.
class Outbox {
 public:
  // Binds to `db`, creating or migrating the sluice schema if needed (not inside a transaction).
  explicit Outbox(SQLite::Database& db, Options options = {});
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Appends `event` inside the transaction the caller has open on the connection; it commits or
  // rolls back with the caller's own writes. Throws TransactionError if no transaction is open,
  // InvalidArgument for an empty topic, malformed JSON or an oversized payload. A duplicate
  // (existing event ID, or dedup key already used in the topic) writes nothing, leaves the
  // transaction usable and returns a result naming the existing event.
  EnqueueResult enqueue(const NewEvent& event);

  // enqueue() for each event in order, in the caller's open transaction. All events are
  // validated before any is written.
  std::vector<EnqueueResult> enqueue_batch(const std::vector<NewEvent>& events);

  // enqueue() in a transaction of its own (BEGIN IMMEDIATE ... COMMIT).
  EnqueueResult enqueue_now(const NewEvent& event);

  // Ingests an event that arrived from outside (a relay, a broker) with its own ID, which is
  // required. The first arrival is stored and reaches every subscribed consumer; a later arrival
  // of the same ID returns kDuplicateId without effect. Joins the caller's transaction if one is
  // open, else commits in its own.
  EnqueueResult receive(const NewEvent& event);

  // receive() for each event in order, with the same results, several events to a statement.
  // All events are validated before any is written.
  std::vector<EnqueueResult> receive_batch(const std::vector<NewEvent>& events);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Outbox::enqueue without an Outbox, for an app that writes on many connections: appends
// `event` inside the transaction the caller has open on `db`. Statements are prepared on the
// first call on a connection and kept until it closes. It installs no hook: to learn of the close
// it registers an eponymous virtual-table module, "sluice_connection_cache", on the connection
// (SQLite disconnects virtual tables before it closes). So unlike an Outbox it leaves the WAL
// hook alone, and a worker in this process sees the commit within its poll_interval, as it sees
// another process's. The clock is `options.clock`, else the connection's (see open_database).
// Throws TransactionError if no transaction is open or the file has no current sluice schema
// (open it with open_database first), InvalidArgument as Outbox::enqueue does; a duplicate
// writes nothing and returns a result naming the existing event. Not thread-safe: use it where
// the connection is used; a call from a second thread while one runs on the same connection
// throws InvalidArgument.
EnqueueResult enqueue(SQLite::Database& db, const NewEvent& event, const Options& options = {});

}  // namespace sluice
