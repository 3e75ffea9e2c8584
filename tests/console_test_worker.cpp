// A worker process for the console's browser test: the orders example's two consumers, with
// `email`'s mailer fixed to read the "name-at-domain" addresses that dead-lettered order A-1004.
// An order with no usable address at all still fails permanently, so a replayed A-1004 is
// delivered while a new address-less order becomes a dead letter for the operator to discard.
// `billing` charges every order its event names (the test places orders with `sluice enqueue`,
// so there is no row in `orders` to check), once: the charge is keyed by order ID.
// Prints "ready" once subscribed and started; stops cleanly on SIGTERM or SIGINT.
//
// Usage: console_test_worker DB_FILE
#include <SQLiteCpp/SQLiteCpp.h>

#include <csignal>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "sluice/sluice.hpp"

namespace {

// The fixed mailer: "ken-at-example.com" is read as "ken@example.com".
void send_email(const sluice::Event& event, sluice::Context&) {
  const std::string address = nlohmann::json::parse(event.payload).value("email", "");
  if (address.find('@') == std::string::npos && address.find("-at-") == std::string::npos) {
    throw sluice::PermanentError("invalid email address '" + address + "'");
  }
}

void charge(const sluice::Event& event, sluice::Context& ctx) {
  const auto order = nlohmann::json::parse(event.payload);
  SQLite::Statement insert(ctx.db(),
                           "INSERT OR IGNORE INTO charges (order_id, amount_cents) VALUES (?, ?)");
  insert.bind(1, order.value("order_id", ""));
  insert.bind(2, order.value("amount_cents", 0));
  insert.exec();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: console_test_worker DB_FILE\n";
    return 2;
  }
  // The orders example's consumers, as it recorded them in the file (one consumer, one set of
  // options).
  sluice::Options options;
  options.retry.max_attempts = 3;
  options.retry.initial_backoff = std::chrono::milliseconds(200);
  options.poll_interval = std::chrono::milliseconds(50);

  // Block the stop signals before the worker starts its thread, so only sigwait() sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  sluice::Worker worker(argv[1], options);
  worker.subscribe("billing", "order.placed", charge);
  // The orders example's email consumer, with the breaker it recorded in the file: one consumer
  // has one set of options.
  worker.subscribe("email", "order.placed", send_email,
                   {.mode = sluice::DeliveryMode::kOutsideTransaction,
                    .breaker = sluice::Breaker{.failures = 3,
                                               .cool_down = std::chrono::milliseconds(300),
                                               .max_cool_down = std::chrono::seconds(1)}});
  worker.start();
  std::cout << "ready" << std::endl;

  int received = 0;
  sigwait(&stop_signals, &received);
  worker.stop();
  return 0;
}
