// Tests of an app's handlers with sluice/testing.hpp: no file, no thread, no sleep.
#include <iostream>
#include <nlohmann/json.hpp>
#include <sluice/testing.hpp>

namespace st = sluice::testing;
using namespace std::chrono_literals;

// The app's handlers, exactly as it subscribes them in production.
void charge(const sluice::Event& order, sluice::Context& ctx) {
  const int cents = nlohmann::json::parse(order.payload).at("cents");
  if (cents <= 0) throw sluice::PermanentError("nothing to charge");
  ctx.db().exec("INSERT INTO charges VALUES ('" + order.key + "', " + std::to_string(cents) + ")");
  ctx.enqueue({.topic = "order.charged", .payload = order.payload, .key = order.key});
}

void send_receipt(const sluice::Event&, sluice::Context& ctx) {
  if (ctx.attempt() == 1) ctx.retry("mail server busy");  // The first try always fails.
}

void expect(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(what);
}

int main() {
  st::Harness h;  // :memory: database, manual clock, the app's consumers
  h.db().exec("CREATE TABLE charges (order_id TEXT PRIMARY KEY, cents INTEGER)");
  h.subscribe("billing", "order.placed", charge);
  h.subscribe("receipts", "order.charged", send_receipt);

  // A placed order is charged and announced; drain() delivers the cascade too.
  st::require_enqueued_by(h.db(), {.topic = "order.charged", .key = "42"}, [&] {
    h.enqueue({.topic = "order.placed", .payload = R"({"cents":1500})", .key = "42"});
    expect(h.drain().delivered == 1, "billing handled the order");
  });
  // The receipt failed once; a minute later its retry has gone through.
  expect(h.advance(1min).delivered == 1, "the receipt went out on its retry");

  // An order of nothing is dead-lettered at once, and nothing is announced.
  std::string bad;
  st::require_not_enqueued_by(h.db(), {.topic = "order.charged"}, [&] {
    bad = h.enqueue({.topic = "order.placed", .payload = R"({"cents":0})", .key = "43"}).id;
    h.drain();
  });
  expect(st::require_dead_lettered(h.db(), "billing", bad).reason == "permanent", "dead letter");

  // One handler on one event, without the worker: what did it ask for?
  const sluice::Outcome outcome = h.run(send_receipt, sluice::find_event(h.db(), bad));
  expect(outcome.kind == sluice::Outcome::Kind::kRetry, "first attempts are retried");

  std::cout << "handler tests passed\n";
}
