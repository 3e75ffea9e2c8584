// An app built against an installed sluice, as a user builds one: its own table written with
// SQLiteCpp and an event enqueued in the same transaction, delivered by a worker, and a sluice
// exception caught across the library boundary. Usage: app DATABASE
#include <SQLiteCpp/SQLiteCpp.h>

#include <iostream>
#include <sluice/sluice.hpp>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: app DATABASE\n";
    return 2;
  }
  const std::string path = argv[1];
  SQLite::Database db = sluice::open_database(path);
  db.exec("CREATE TABLE orders (id TEXT PRIMARY KEY)");

  sluice::Worker worker(path);
  std::string delivered;
  worker.subscribe("billing", "order.placed", [&](const sluice::Event& event, sluice::Context&) {
    delivered = event.payload;
  });

  sluice::Outbox outbox(db);
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  db.exec("INSERT INTO orders (id) VALUES ('42')");
  outbox.enqueue({.topic = "order.placed", .payload = R"({"order_id":"42"})"});
  try {
    outbox.enqueue({.topic = "", .payload = "{}"});
    std::cerr << "an empty topic was accepted\n";
    return 1;
  } catch (const sluice::InvalidArgument&) {
  }
  tx.commit();

  worker.run_until_idle();
  SQLite::Statement orders(db, "SELECT count(*) FROM orders");
  orders.executeStep();
  std::cout << "orders " << orders.getColumn(0).getInt() << ", delivered " << delivered << "\n";
  return delivered.empty() ? 1 : 0;
}
