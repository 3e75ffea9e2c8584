// The relay: carries a file's events to NATS JetStream, each marked relayed only once JetStream
// has acknowledged it. Built when the `nats` meson feature is on.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/event.hpp"
#include "sluice/options.hpp"
#include "sluice/retry_policy.hpp"
#include "sluice/worker.hpp"

namespace sluice {

struct RelayOptions {
  // A NATS server URL, or a comma-separated list of a cluster's servers.
  std::string nats_url = "nats://127.0.0.1:4222";
  // The JetStream stream the events go to. Required.
  std::string stream;
  // Topics relayed. Required.
  std::vector<std::string> topics;
  // An event's subject is subject_prefix + "." + topic (just the topic when the prefix is empty)
  // unless subject_for is set.
  std::string subject_prefix;
  std::function<std::string(const Event&)> subject_for;
  // The sluice consumer that records what was relayed; its stats are the relay's lag, relayed
  // total and dead letters.
  std::string consumer = "nats-relay";
  // On start, create the stream if it does not exist: file storage, subjects subject_prefix +
  // ".>" (or the topics), and the settings below. A stream that exists keeps its settings (its
  // limits, its duplicate window, other relays' subjects): the relay only adds its own subjects
  // to it, or with update_stream false only checks that it takes them (and relays nothing until
  // it does).
  bool ensure_stream = true;
  bool update_stream = true;
  Duration duplicate_window = std::chrono::minutes(2);
  int replicas = 1;
  // Publishes whose JetStream acknowledgement is still awaited, at most.
  int max_outstanding_acks = 1024;
  // A publish not acknowledged within this is taken as failed and tried again later.
  Duration ack_timeout = std::chrono::seconds(5);
  // While the broker is unreachable, events are tried again after a delay growing from
  // min_backoff to max_backoff, doubled once per retry. No attempt is spent and nothing is
  // dead-lettered. When the connection comes back they are tried at once.
  Duration min_backoff = std::chrono::milliseconds(200);
  Duration max_backoff = std::chrono::seconds(30);
  // Spent only when the relay process dies while publishing a batch: a broker outage snoozes
  // instead, and a refusal dead-letters at once. Generous, so that restarts never dead-letter.
  RetryPolicy retry{.max_attempts = 50,
                    .initial_backoff = std::chrono::milliseconds(100),
                    .max_backoff = std::chrono::seconds(10)};
};

// What this relay did since it was constructed. The durable figures (lag, relayed total, dead
// letters) are in consumer_stats() for RelayOptions::consumer.
struct RelayCounters {
  // Acknowledged by JetStream, duplicates included.
  long long published = 0;
  // Acknowledged as a duplicate inside the stream's duplicate window.
  long long duplicates = 0;
  // Publishes that failed for a passing reason (broker down, timeout): tried again later.
  long long broker_errors = 0;
  // Refused for good by the broker (no stream, too large): dead-lettered with the reason.
  long long rejected = 0;
  // Batches handed to the relay: each is one commit in the file and one publish-and-wait round
  // per event of its busiest key.
  long long batches = 0;
};

// start(), stop(), counters(), metrics_text() and the destructor are thread-safe.
// run_until_idle() while started or while another thread is in it, and start() while a thread is
// in run_until_idle(), throw InvalidArgument (as Worker's do).
class Relay {
 public:
  // Opens `path` and connects to NATS (in the background if no server answers yet). Throws
  // InvalidArgument for missing options. A stream that cannot be ensured yet is tried again
  // before each batch; the events wait meanwhile. Options::batch_size is the claim size: the relay
  // does far better with large claims (`sluice relay` uses 8192) than with the default 512.
  Relay(const std::string& path, RelayOptions relay_options, Options options = {});
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Relays on a background thread until stop().
  void start();
  void stop();
  // Relays in the calling thread until nothing is due.
  DrainResult run_until_idle();

  RelayCounters counters() const;
  // Prometheus text exposition of counters(), labelled by consumer.
  std::string metrics_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
