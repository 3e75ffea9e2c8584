#include <atomic>
#include <iostream>
#include <sluice/sluice.hpp>

int main() {
  SQLite::Database db = sluice::open_database("app.db");  // WAL, busy timeout, sluice schema
  db.exec("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, status TEXT)");
  sluice::Outbox outbox(db);  // bound to this connection

  // Consumer: the handler's writes, the inbox row and the delivery state commit together.
  // Subscribe before enqueueing: a new consumer starts from "now" (or set
  // .start_from = sluice::StartFrom::kOldest to take every retained event).
  sluice::Worker worker("app.db");  // its own connection and thread
  std::atomic<bool> handled{false};
  worker.subscribe("billing", "order.placed", [&](const sluice::Event& e, sluice::Context& ctx) {
    ctx.db().exec("UPDATE orders SET status = 'charged' WHERE id = '42' AND status = 'placed'");
    // ctx.retry("why") or any exception -> retry; ctx.dead_letter("why") or
    // throw sluice::PermanentError("why") -> dead letter at once
    std::cout << "billing handled " << e.id << "\n";
    handled = true;
    handled.notify_one();
  });
  worker.start();  // or worker.run_until_idle() in tests and scripts

  // Producer: the order row and its event commit together, or not at all. The request may come
  // again (a client's retry, this program run twice): the row is written once, and the event's
  // ID says whether it was enqueued before.
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  db.exec("INSERT INTO orders (id, status) VALUES ('42', 'placed') ON CONFLICT (id) DO NOTHING");
  auto result = outbox.enqueue({.topic = "order.placed",
                                .payload = R"({"order_id":"42"})",
                                .key = "42",           // ordering key
                                .id = "request-7f3a",  // idempotency key, or empty: generated
                                .dedup_key = "order-42:placed"});
  if (result.duplicate()) {
    // Done before, and handled then: nothing to write (the transaction rolls back) or wait for.
    std::cout << "already enqueued as " << result.id << "\n";
  } else {
    tx.commit();  // wakes the worker at once
    handled.wait(false);
  }
  worker.stop();  // finishes the batch in hand: the handler's writes are committed
  SQLite::Statement status(db, "SELECT status FROM orders WHERE id = '42'");
  status.executeStep();
  std::cout << "order 42 is " << status.getColumn(0).getString() << "\n";  // charged
}
