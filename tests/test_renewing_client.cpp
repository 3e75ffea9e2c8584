// RenewingClient against a real nats-server: a connection that stays down is made anew.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "nats/renewing_client.hpp"
#include "nats_server_process.hpp"

using sluice::nats::RenewingClient;
using sluice::testing::NatsServerProcess;

namespace {

// Polls `done` every 20 ms for at most 15 s.
template <typename Done>
bool eventually(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace

TEST_CASE("a client unconnected past its patience is replaced, and one that connects is kept") {
  NatsServerProcess server;
  server.stop();
  sluice::nats::ConnectionSettings settings;
  settings.url = server.url();
  settings.require_first_connect = false;
  RenewingClient connection(settings, std::chrono::milliseconds(200));
  CHECK_FALSE(connection.connected());
  CHECK(connection.generation() == 0);
  REQUIRE(eventually([&] { return !connection.connected() && connection.generation() >= 2; }));

  server.start();
  REQUIRE(eventually([&] { return connection.connected(); }));
  const auto kept = connection.generation();
  connection.client().ensure_stream({.name = "RENEWED", .subjects = {"renewed.>"}});
  CHECK(connection.connected());
  CHECK(connection.generation() == kept);
}
