// A JetStream client that is replaced by a new connection once it has stayed unconnected too long.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "jetstream_client.hpp"

namespace sluice::nats {

// libnats 3.4's background connect (ConnectionSettings::require_first_connect = false) has been
// seen to stay unconnected for minutes while the server was up and taking other connections: a
// relay restarted right after a kill -9 in test_relay_ingest_exactly_once never connected. A new
// connection gets through, so after `patience` without a connection the client is made anew.
// Not thread-safe: used by the one thread that publishes or fetches through it.
class RenewingClient {
 public:
  // Five times the default connect timeout: long enough for a connect under load, short against a
  // broker outage's backoff.
  static constexpr std::chrono::steady_clock::duration kPatience = std::chrono::seconds(10);

  explicit RenewingClient(ConnectionSettings settings,
                          std::chrono::steady_clock::duration patience = kPatience);

  // Whether the client is connected. One that has not been for longer than the patience is
  // replaced first (and reported unconnected: the new one connects in the background).
  bool connected();

  // The current client; a reference is good until connected() replaces it.
  JetStreamClient& client() { return *client_; }

  // Counts the replacements, so that what was built on a client (a pull consumer) is rebuilt.
  std::uint64_t generation() const { return generation_; }

 private:
  ConnectionSettings settings_;
  std::chrono::steady_clock::duration patience_;
  std::unique_ptr<JetStreamClient> client_;
  std::uint64_t generation_ = 0;
  // Since when the client may have been unconnected; empty while it is connected.
  std::optional<std::chrono::steady_clock::time_point> unconnected_since_;
};

}  // namespace sluice::nats
