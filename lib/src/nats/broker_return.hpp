// A relay's events snoozed while the broker was unreachable, made due the moment it is back.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "sluice/options.hpp"

namespace sluice::nats {

// Events snoozed while the broker was unreachable wait for the relay's backoff, up to
// RelayOptions::max_backoff; when the connection comes back they are made due at once and the
// relay's worker wakes. Thread-safe: connected() runs on libnats' thread, on a connection to the
// file of its own opened for the occasion (the worker's connection is its thread's alone).
// The client's settings hold it, so it outlives every callback.
class BrokerReturn {
 public:
  // `options` must carry a clock.
  BrokerReturn(std::string path, std::string consumer, Options options);

  // The client connected (again): makes `consumer`'s snoozed deliveries due now. Logs rather than
  // throws: it runs in libnats' callback.
  void connected();

  // How many times connected() was called: a batch that saw it change failed across a return.
  std::uint64_t count() const { return count_.load(); }

 private:
  std::string path_;
  std::string consumer_;
  Options options_;
  std::atomic<std::uint64_t> count_{0};
};

}  // namespace sluice::nats
