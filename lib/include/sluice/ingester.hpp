// The ingester: a durable JetStream pull consumer that receives relayed events into a file's
// inbox, acknowledging each message only after the local commit. Built when the `nats` meson
// feature is on.
#pragma once

#include <memory>
#include <string>

#include "sluice/clock.hpp"
#include "sluice/options.hpp"

namespace sluice {

struct IngesterOptions {
  // A NATS server URL, or a comma-separated list of a cluster's servers.
  std::string nats_url = "nats://127.0.0.1:4222";
  // The stream to read. Required.
  std::string stream;
  // The durable JetStream consumer's name. Required; one ingester per durable.
  std::string durable;
  // Messages fetched and committed in one local transaction, at most.
  int fetch_batch = 1024;
  // How long one fetch waits for messages.
  Duration fetch_wait = std::chrono::milliseconds(500);
  // A delivered message not acknowledged within this is redelivered by JetStream.
  Duration ack_wait = std::chrono::seconds(30);
  // While the broker is unreachable, fetches are tried again after a delay growing from
  // min_backoff to max_backoff.
  Duration min_backoff = std::chrono::milliseconds(200);
  Duration max_backoff = std::chrono::seconds(10);
};

// What this ingester did since it was constructed.
struct IngesterCounters {
  // Events stored in the file for the first time.
  long long received = 0;
  // Messages whose event the file already had: acknowledged without effect.
  long long duplicates = 0;
  // Messages that are not sluice events (no Nats-Msg-Id or Sluice-Topic, a Sluice-Not-Before that
  // is not milliseconds since the epoch, a payload sluice refuses): terminated at the broker (so
  // JetStream publishes a MSG_TERMINATED advisory for each) and logged.
  long long malformed = 0;
  // Fetches or acknowledgements that failed because of the broker.
  long long broker_errors = 0;
};

// What one poll() did.
struct IngestResult {
  long long received = 0;
  long long duplicates = 0;
};

// start(), stop(), counters(), metrics_text() and the destructor are thread-safe. poll() takes one
// thread at a time and only while not started: poll() while started or while another thread
// polls, and start() while a thread polls, throw InvalidArgument.
class Ingester {
 public:
  // Opens `path` and connects to NATS (in the background if no server answers yet). Throws
  // InvalidArgument for missing options.
  Ingester(const std::string& path, IngesterOptions ingester_options, Options options = {});
  ~Ingester();
  Ingester(const Ingester&) = delete;
  Ingester& operator=(const Ingester&) = delete;

  // Ingests on a background thread until stop().
  void start();
  void stop();
  // One fetch, waiting up to fetch_wait, committed and acknowledged. Throws NatsError-derived
  // Error when the broker cannot be reached, DatabaseError when the file cannot be written (then
  // nothing is acknowledged). A started ingester logs either, backs off and tries again.
  IngestResult poll();

  IngesterCounters counters() const;
  // Prometheus text exposition of counters() and of sluice_ingest_pending_messages, the messages
  // in the stream after the last one fetched (how far behind the stream this ingester is),
  // labelled by stream and durable.
  std::string metrics_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
