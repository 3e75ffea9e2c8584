// The orders example: an order service writes an order and its `order.placed` event in one
// transaction; `billing` (in the transaction, state-checked) and `email` (outside it) consume it.
// One payment call fails once and recovers; one order has an address no mailer accepts and is
// dead-lettered. Then the mail API goes down for 2 s while more orders come in: with its circuit
// breaker the email consumer stops trying, probes now and then, and sends every receipt once the
// API is back (no dead letter); run with --no-breaker, the outage dead-letters them all.
// Usage: orders [--no-breaker] [DATABASE]   (default orders.db; the file is left for inspection.
// The breaker is one of the consumer's recorded options: use a new file to switch it.)
#include <SQLiteCpp/SQLiteCpp.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "sluice/sluice.hpp"

namespace {

struct Order {
  std::string id;
  std::string customer;
  std::string email;
  int amount_cents;
};

std::mutex print_mutex;

void say(const std::string& line) {
  std::lock_guard lock(print_mutex);
  std::cout << line << std::endl;
}

// The app's own write and the event commit together, or neither does.
void place_order(SQLite::Database& db, sluice::Outbox& outbox, const Order& order,
                 const std::string& idempotency_key) {
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  const nlohmann::json payload = {{"order_id", order.id},
                                  {"customer", order.customer},
                                  {"email", order.email},
                                  {"amount_cents", order.amount_cents}};
  const sluice::EnqueueResult result = outbox.enqueue({.topic = "order.placed",
                                                       .payload = payload.dump(),
                                                       .key = order.id,
                                                       .id = idempotency_key,
                                                       .dedup_key = order.id + ":placed"});
  if (result.duplicate()) {
    say("  order " + order.id + ": request " + idempotency_key + " is a duplicate of event " +
        result.id + "; nothing written");
    return;  // the transaction rolls back: no second order row either
  }
  SQLite::Statement insert(db,
                           "INSERT INTO orders (id, customer, amount_cents, status) "
                           "VALUES (?, ?, ?, 'placed')");
  insert.bind(1, order.id);
  insert.bind(2, order.customer);
  insert.bind(3, order.amount_cents);
  insert.exec();
  tx.commit();
  say("  order " + order.id + " placed (" + std::to_string(order.amount_cents) + " cents), event " +
      result.id);
}

// Charges an order at most once: the status check makes a redelivered or backfilled event a
// no-op even if its seen mark was cleared.
void charge(const sluice::Event& event, sluice::Context& ctx, std::atomic<int>& gateway_calls) {
  const auto order = nlohmann::json::parse(event.payload);
  const std::string id = order["order_id"];
  SQLite::Statement status(ctx.db(), "SELECT status FROM orders WHERE id = ?");
  status.bind(1, id);
  if (!status.executeStep()) throw sluice::PermanentError("order " + id + " does not exist");
  if (status.getColumn(0).getString() == "charged") {
    say("  billing: order " + id + " is already charged; skipping");
    return;
  }
  if (id == "A-1003" && gateway_calls.fetch_add(1) == 0) {
    say("  billing: payment gateway timed out for order " + id + " (attempt " +
        std::to_string(ctx.attempt()) + "); will retry");
    // An expected failure: asked for without an exception (throwing would retry it too).
    return ctx.retry("payment gateway timeout");
  }
  SQLite::Statement insert(ctx.db(), "INSERT INTO charges (order_id, amount_cents) VALUES (?, ?)");
  insert.bind(1, id);
  insert.bind(2, order["amount_cents"].get<int>());
  insert.exec();
  ctx.db().exec("UPDATE orders SET status = 'charged' WHERE id = '" + id + "'");
  say("  billing: charged order " + id + " (attempt " + std::to_string(ctx.attempt()) + ")");
}

// Whether the (simulated) mail API is down.
std::atomic<bool> mail_down{false};

// An external side effect: runs outside the transaction, at least once, so it hands the event ID
// to the mailer as its idempotency key.
void send_email(const sluice::Event& event, sluice::Context& ctx) {
  // A transient failure: retried, and counted by the breaker.
  if (mail_down) return ctx.retry("mail API unavailable (simulated outage)");
  const auto order = nlohmann::json::parse(event.payload);
  const std::string address = order["email"];
  if (address.find('@') == std::string::npos) {
    say("  email: '" + address + "' is not an address; giving up on event " + event.id);
    throw sluice::PermanentError("invalid email address '" + address + "'");
  }
  say("  email: receipt for order " + order["order_id"].get<std::string>() + " sent to " + address +
      " (idempotency key " + event.id + ", attempt " + std::to_string(ctx.attempt()) + ")");
}

bool drained(SQLite::Database& db) {
  for (const auto& stats : sluice::consumer_stats(db)) {
    if (stats.pending + stats.claimed > 0) return false;
  }
  return true;
}

void wait_until_drained(SQLite::Database& db) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!drained(db)) {
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("the worker did not drain within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

long long email_dead_letters(SQLite::Database& db) {
  for (const auto& stats : sluice::consumer_stats(db)) {
    if (stats.consumer == "email") return stats.dead;
  }
  return 0;
}

long long count(SQLite::Database& db, const std::string& sql) {
  return db.execAndGet(sql).getInt64();
}

}  // namespace

int main(int argc, char** argv) {
  const bool breaker = !(argc > 1 && std::string(argv[1]) == "--no-breaker");
  const int first_argument = breaker ? 1 : 2;
  const std::string path = argc > first_argument ? argv[first_argument] : "orders.db";
  try {
    sluice::Options options;
    options.retry.max_attempts = 3;
    options.retry.initial_backoff = std::chrono::milliseconds(200);
    options.poll_interval = std::chrono::milliseconds(50);

    SQLite::Database db = sluice::open_database(path, options);
    db.exec(
        "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, customer TEXT NOT NULL, "
        "amount_cents INTEGER NOT NULL, status TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS charges (order_id TEXT PRIMARY KEY, "
        "amount_cents INTEGER NOT NULL)");
    sluice::Outbox outbox(db, options);

    std::atomic<int> gateway_calls{0};
    sluice::Worker worker(path, options);
    worker.subscribe("billing", "order.placed", [&](const sluice::Event& e, sluice::Context& ctx) {
      charge(e, ctx, gateway_calls);
    });
    sluice::ConsumerOptions email{.mode = sluice::DeliveryMode::kOutsideTransaction};
    // Three failures in a row open it for 300 ms, then for twice as long per failed probe, at
    // most 1 s.
    if (breaker) {
      email.breaker = sluice::Breaker{.failures = 3,
                                      .cool_down = std::chrono::milliseconds(300),
                                      .max_cool_down = std::chrono::seconds(1)};
    }
    worker.subscribe("email", "order.placed", send_email, email);
    worker.start();

    std::cout << "sluice orders example, database " << path << "\n\nPlacing orders:\n";
    const std::vector<Order> orders = {{"A-1001", "ada", "ada@example.com", 1250},
                                       {"A-1002", "grace", "grace@example.com", 4200},
                                       {"A-1003", "linus", "linus@example.com", 990},
                                       {"A-1004", "ken", "ken-at-example.com", 1500},
                                       {"A-1005", "barbara", "barbara@example.com", 3100}};
    for (const Order& order : orders) place_order(db, outbox, order, "req-" + order.id);
    std::cout << "A client retries its request for A-1002 with the same Idempotency-Key:\n";
    place_order(db, outbox, orders[1], "req-A-1002");
    std::cout << "Another request for A-1002 with a new key but the same business operation:\n";
    place_order(db, outbox, orders[1], "req-A-1002-again");

    std::cout << "\nDelivering (a worker thread; retries back off 200 ms):\n";
    wait_until_drained(db);

    std::cout << "\nBackfill: re-feed billing every retained event (the state check must hold):\n";
    const std::string first_event = sluice::list_events(db, {.limit = 1}).at(0).id;
    const long long queued =
        sluice::backfill(db, "billing", {.from_event_id = first_event}, options);
    std::cout << "  queued " << queued << " events for billing\n";
    wait_until_drained(db);

    std::cout << "\nA mail outage: the mail API is down for 2 s while three more orders come in ("
              << (breaker ? "with" : "without") << " the email consumer's circuit breaker):\n";
    const long long dead_before = email_dead_letters(db);
    mail_down = true;
    const std::vector<Order> during_outage = {{"B-2001", "edsger", "edsger@example.com", 700},
                                              {"B-2002", "donald", "donald@example.com", 2600},
                                              {"B-2003", "frances", "frances@example.com", 1800}};
    for (const Order& order : during_outage) place_order(db, outbox, order, "req-" + order.id);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    mail_down = false;
    wait_until_drained(db);
    const long long dead_in_outage = email_dead_letters(db) - dead_before;
    std::cout << "  mail outage: " << dead_in_outage << " of " << during_outage.size()
              << " receipts dead-lettered (breaker " << (breaker ? "on" : "off") << ")\n";
    worker.stop();

    std::cout << "\nWhat happened:\n";
    const long long placed = count(db, "SELECT count(*) FROM orders");
    const long long charged = count(db, "SELECT count(*) FROM charges");
    const long long double_charged = count(db,
                                           "SELECT count(*) FROM (SELECT order_id FROM charges "
                                           "GROUP BY order_id HAVING count(*) > 1)");
    std::cout << "  orders placed: " << placed << ", charged: " << charged
              << ", charged twice: " << double_charged << "\n";
    for (const auto& stats : sluice::consumer_stats(db)) {
      std::cout << "  consumer " << stats.consumer << ": delivered " << stats.delivered_total
                << ", retries " << stats.retries_total << ", dead letters " << stats.dead
                << ", pending " << stats.pending << "\n";
    }
    for (const auto& letter : sluice::list_dead_letters(db, {})) {
      std::cout << "  dead letter: event " << letter.event_id << " for " << letter.consumer << " ("
                << letter.reason << " after " << letter.attempts << " attempt"
                << (letter.attempts == 1 ? "" : "s") << "): " << letter.last_error << "\n";
    }
    std::cout << "\nThe file is left at " << path << ". Look inside with:\n"
              << "  build/cli/sluice --db " << path << " stats\n"
              << "  build/cli/sluice --db " << path << " dlq list\n"
              << "  sqlite3 " << path << " 'SELECT * FROM charges'\n";
    const bool ok = charged == placed && double_charged == 0;
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "orders: " << e.what() << "\n";
    return 1;
  }
}
