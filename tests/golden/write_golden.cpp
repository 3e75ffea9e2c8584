// Wrote tests/golden/v4.sluice, the golden file: a sluice file as the build of schema version 4
// left it, which every later build must open, migrate and deliver (tests/test_golden_file.cpp).
// Kept to show what the file holds; the tests never run it, since a later build would write a
// later format. Usage: write_golden FILE (FILE must not exist).
//
// On a clock stopped at 2024-01-01T00:00:00Z (1704067200000 ms), it leaves:
// - the app's table `orders` (six orders) and `ledger` (what handlers wrote, one row per
//   delivery of an in-transaction consumer);
// - events: order.placed for orders 1..6 (key = order number, dedup key "order-N:placed",
//   header trace = "t-N", order 6's header "note" = "café"), a refused duplicate of order 1's,
//   order.cancelled for order 6 (not before 2024-01-01T00:01:00Z), order.shipped for orders 1
//   and 2;
// - consumer billing (in-transaction, ordered; 3 attempts, 60 s backoff, no jitter) on
//   order.placed: orders 1, 2 (after one failed attempt: attempts history), 6 delivered;
//   order 3 failed twice and waits for its last retry ("payment gateway timeout"); order 4
//   dead-lettered ("card declined", permanent: parks key 4); order 5 dead-lettered and
//   discarded ("customer deleted", note "refunded by hand");
// - consumer shipping (in-transaction, from the oldest event) on order.placed and
//   order.cancelled: all seven delivered;
// - consumer audit (outside the transaction) on order.placed: all six delivered;
// - consumer mailer (in-transaction) on order.shipped: both events pending, never run.
#include <filesystem>
#include <iostream>
#include <memory>
#include <sluice/sluice.hpp>
#include <string>

namespace {

using sluice::Duration;
using sluice::TimePoint;

const TimePoint kStart{Duration(1704067200000)};

void record(sluice::Context& ctx, const sluice::Event& event) {
  SQLite::Statement insert(ctx.db(), "INSERT INTO ledger (event_id, consumer) VALUES (?, ?)");
  insert.bind(1, event.id);
  insert.bind(2, ctx.consumer());
  insert.exec();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::filesystem::exists(argv[1])) {
    std::cerr << "usage: write_golden FILE (a new file)\n";
    return 2;
  }
  const std::string path = argv[1];
  auto clock = std::make_shared<sluice::ManualClock>(kStart);
  sluice::Options options;
  options.clock = clock;

  SQLite::Database db = sluice::open_database(path, options);
  db.exec("CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL)");
  db.exec("CREATE TABLE ledger (event_id TEXT NOT NULL, consumer TEXT NOT NULL)");

  sluice::Worker worker(path, options);
  const sluice::RetryPolicy billing_retry{
      .max_attempts = 3, .initial_backoff = std::chrono::seconds(60), .jitter = 0.0};
  int order_2_failures = 0;
  worker.subscribe("billing", "order.placed",
                   [&](const sluice::Event& event, sluice::Context& ctx) {
                     if (event.key == "2" && order_2_failures++ == 0)
                       return ctx.retry("gateway busy");
                     if (event.key == "3") return ctx.retry("payment gateway timeout");
                     if (event.key == "4") return ctx.dead_letter("card declined");
                     if (event.key == "5") return ctx.dead_letter("customer deleted");
                     SQLite::Statement charge(ctx.db(),
                                              "UPDATE orders SET status = 'charged' WHERE id = ?");
                     charge.bind(1, event.key);
                     charge.exec();
                     record(ctx, event);
                   },
                   {.ordered = true, .retry = billing_retry});
  const sluice::ConsumerOptions shipping{.start_from = sluice::StartFrom::kOldest};
  for (const char* topic : {"order.placed", "order.cancelled"}) {
    worker.subscribe(
        "shipping", topic,
        [](const sluice::Event& event, sluice::Context& ctx) { record(ctx, event); }, shipping);
  }
  worker.subscribe("audit", "order.placed", [](const sluice::Event&, sluice::Context&) {},
                   {.mode = sluice::DeliveryMode::kOutsideTransaction});
  {
    // Registered by a worker of its own that is never run: its events stay pending.
    sluice::Worker mailer(path, options);
    mailer.subscribe("mailer", "order.shipped", [](const sluice::Event&, sluice::Context&) {});
  }

  sluice::Outbox outbox(db, options);
  for (int n = 1; n <= 6; ++n) {
    const std::string order = std::to_string(n);
    SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
    db.exec("INSERT INTO orders (id, status) VALUES ('" + order + "', 'placed')");
    sluice::Headers headers{{"trace", "t-" + order}};
    if (n == 6) headers["note"] = "café";
    outbox.enqueue({.topic = "order.placed",
                    .payload = R"({"order_id":")" + order + R"("})",
                    .headers = headers,
                    .key = order,
                    .id = "order-" + order + "-placed",
                    .dedup_key = "order-" + order + ":placed"});
    tx.commit();
    clock->advance(std::chrono::seconds(1));
  }
  const auto duplicate =
      outbox.enqueue_now({.topic = "order.placed", .dedup_key = "order-1:placed"});
  if (!duplicate.duplicate()) return 1;
  outbox.enqueue_now({.topic = "order.cancelled",
                      .payload = R"({"order_id":"6"})",
                      .key = "6",
                      .id = "order-6-cancelled",
                      .not_before = kStart + std::chrono::minutes(1)});

  worker.run_until_idle();
  // Order 2's retry succeeds; order 3 fails its second attempt of three; order 6's cancel is due.
  clock->advance(std::chrono::minutes(2));
  worker.run_until_idle();

  sluice::discard_dead_letters(db, {.event_ids = {"order-5-placed"}}, "refunded by hand", options);
  for (int n = 1; n <= 2; ++n) {
    const std::string order = std::to_string(n);
    outbox.enqueue_now({.topic = "order.shipped",
                        .payload = R"({"order_id":")" + order + R"("})",
                        .key = order,
                        .id = "order-" + order + "-shipped"});
  }
  std::cout << "wrote " << path << " (schema version " << sluice::schema_version() << ")\n";
}
