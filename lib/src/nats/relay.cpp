#include "sluice/relay.hpp"

#include <atomic>
#include <deque>
#include <string_view>
#include <unordered_set>

#include "../log_to.hpp"
#include "backoff.hpp"
#include "jetstream_client.hpp"
#include "message_headers.hpp"
#include "sluice/error.hpp"

namespace sluice {
namespace {

void validate(const RelayOptions& o) {
  if (o.stream.empty()) throw InvalidArgument("relay: RelayOptions::stream is empty");
  if (o.topics.empty()) throw InvalidArgument("relay: RelayOptions::topics is empty");
  if (o.consumer.empty()) throw InvalidArgument("relay: RelayOptions::consumer is empty");
  if (o.max_outstanding_acks < 1)
    throw InvalidArgument("relay: RelayOptions::max_outstanding_acks must be >= 1");
  if (o.replicas < 1) throw InvalidArgument("relay: RelayOptions::replicas must be >= 1");
}

nats::ConnectionSettings connection_settings(const RelayOptions& o) {
  nats::ConnectionSettings settings;
  settings.url = o.nats_url;
  settings.name = "sluice-relay " + o.consumer;
  settings.max_outstanding_acks = o.max_outstanding_acks;
  settings.require_first_connect = false;
  return settings;
}

nats::StreamSpec stream_spec(const RelayOptions& o) {
  nats::StreamSpec spec;
  spec.name = o.stream;
  spec.subjects =
      o.subject_prefix.empty() ? o.topics : std::vector<std::string>{o.subject_prefix + ".>"};
  spec.duplicate_window = o.duplicate_window;
  spec.replicas = o.replicas;
  spec.file_storage = true;
  return spec;
}

}  // namespace

struct Relay::Impl {
  Impl(const std::string& path, RelayOptions relay_options_in, Options options_in)
      : relay_options(std::move(relay_options_in)),
        options(std::move(options_in)),
        client(connection_settings(relay_options)),
        backoff(relay_options.min_backoff, relay_options.max_backoff),
        worker(path, options) {
    std::string error;
    if (client.connected() && !ensure_stream(error))
      log_to(options, LogLevel::kWarn, "relay: cannot ensure the stream yet, will try again",
             {{"stream", relay_options.stream}, {"error", error}});
    ConsumerOptions consumer_options;
    consumer_options.mode = DeliveryMode::kOutsideTransaction;
    consumer_options.ordered = true;
    consumer_options.start_from = StartFrom::kOldest;
    consumer_options.retry = relay_options.retry;
    for (const auto& topic : relay_options.topics)
      worker.subscribe_batch(
          relay_options.consumer, topic,
          [this](const std::vector<Event>& events) { return relay(events); }, consumer_options);
  }

  std::string subject_of(const Event& event) const {
    if (relay_options.subject_for) return relay_options.subject_for(event);
    return relay_options.subject_prefix.empty() ? event.topic
                                                : relay_options.subject_prefix + "." + event.topic;
  }

  // Creating the stream waits for the broker when the relay started while it was down.
  bool ensure_stream(std::string& error) {
    if (stream_ready || !relay_options.ensure_stream) return true;
    try {
      client.ensure_stream(stream_spec(relay_options));
      stream_ready = true;
    } catch (const Error& e) {
      error = e.what();
    }
    return stream_ready;
  }

  // Publishes in rounds: each round sends at most one event per key, so a later event of a key
  // is never stored before an earlier one that failed. Unkeyed events all go in the first round.
  std::vector<Outcome> relay(const std::vector<Event>& events) {
    std::vector<Outcome> outcomes(events.size());
    std::optional<Duration> broker_delay;
    std::string first_broker_error;
    auto broker_failed = [&](const std::string& error) {
      if (!broker_delay) {
        broker_delay = backoff.failed();
        first_broker_error = error;
      }
      ++broker_errors;
      return Outcome::snooze(*broker_delay);
    };

    std::string unavailable;
    if (!client.connected()) unavailable = "not connected to NATS at " + relay_options.nats_url;
    if (unavailable.empty() && !ensure_stream(unavailable)) unavailable += " (ensuring stream)";
    if (!unavailable.empty()) {
      for (auto& outcome : outcomes) outcome = broker_failed(unavailable);
      report_broker_trouble(first_broker_error, *broker_delay, events.size());
      return outcomes;
    }

    // Views of the events' keys, which outlive both sets.
    std::unordered_set<std::string_view> held_keys;
    std::vector<std::size_t> remaining(events.size());
    for (std::size_t i = 0; i < events.size(); ++i) remaining[i] = i;
    while (!remaining.empty()) {
      std::vector<std::size_t> round;
      std::vector<std::size_t> later;
      round.reserve(remaining.size());
      std::unordered_set<std::string_view> keys_in_round;
      keys_in_round.reserve(remaining.size());
      for (std::size_t i : remaining) {
        const std::string& key = events[i].key;
        if (!key.empty() && held_keys.count(key)) {
          outcomes[i] = Outcome::snooze(broker_delay.value_or(relay_options.min_backoff));
        } else if (!key.empty() && !keys_in_round.insert(key).second) {
          later.push_back(i);
        } else if (std::string problem = nats::reserved_header_problem(events[i].headers);
                   !problem.empty()) {
          outcomes[i] = reject(events[i], problem);
          if (!key.empty()) held_keys.insert(key);
        } else {
          round.push_back(i);
        }
      }
      std::vector<nats::OutgoingMessage> messages;
      messages.reserve(round.size());
      std::deque<std::string> header_texts;
      for (std::size_t i : round)
        messages.push_back({subject_of(events[i]), events[i].id, events[i].payload,
                            nats::message_headers(events[i], header_texts)});
      std::vector<nats::PublishOutcome> published_outcomes =
          client.publish(messages, relay_options.ack_timeout);
      for (std::size_t r = 0; r < round.size(); ++r) {
        const std::size_t i = round[r];
        const nats::PublishOutcome& result = published_outcomes[r];
        if (result.acknowledged()) {
          ++published;
          if (result.kind == nats::PublishOutcome::Kind::kDuplicate) ++duplicates;
          continue;
        }
        outcomes[i] = result.kind == nats::PublishOutcome::Kind::kPermanent
                          ? reject(events[i], result.error)
                          : broker_failed(result.error);
        if (!events[i].key.empty()) held_keys.insert(events[i].key);
      }
      remaining = std::move(later);
    }
    if (broker_delay) {
      report_broker_trouble(first_broker_error, *broker_delay, events.size());
    } else {
      if (broker_was_failing)
        log_to(options, LogLevel::kInfo, "relay: broker reachable again",
               {{"consumer", relay_options.consumer}, {"stream", relay_options.stream}});
      broker_was_failing = false;
      backoff.succeeded();
    }
    return outcomes;
  }

  Outcome reject(const Event& event, const std::string& reason) {
    ++rejected;
    log_to(options, LogLevel::kError, "relay: broker refused event for good",
           {{"consumer", relay_options.consumer},
            {"event_id", event.id},
            {"topic", event.topic},
            {"error", reason}});
    return Outcome::permanent("NATS JetStream refused the event: " + reason);
  }

  void report_broker_trouble(const std::string& error, Duration delay, std::size_t batch) {
    broker_was_failing = true;
    log_to(options, LogLevel::kWarn,
           "relay: broker unavailable, events wait without spending attempts",
           {{"consumer", relay_options.consumer},
            {"stream", relay_options.stream},
            {"error", error},
            {"batch", std::to_string(batch)},
            {"retry_in_ms", std::to_string(delay.count())}});
  }

  RelayOptions relay_options;
  Options options;
  nats::JetStreamClient client;
  bool stream_ready = false;
  // Touched only by the relay's batch handler, which never runs twice at once.
  nats::Backoff backoff;
  bool broker_was_failing = false;
  std::atomic<long long> published{0};
  std::atomic<long long> duplicates{0};
  std::atomic<long long> broker_errors{0};
  std::atomic<long long> rejected{0};
  // Declared last so it stops before the client it publishes through is destroyed.
  Worker worker;
};

Relay::Relay(const std::string& path, RelayOptions relay_options, Options options) {
  validate(relay_options);
  impl_ = std::make_unique<Impl>(path, std::move(relay_options), std::move(options));
}

Relay::~Relay() = default;

void Relay::start() { impl_->worker.start(); }

void Relay::stop() { impl_->worker.stop(); }

DrainResult Relay::run_until_idle() { return impl_->worker.run_until_idle(); }

RelayCounters Relay::counters() const {
  return {impl_->published.load(), impl_->duplicates.load(), impl_->broker_errors.load(),
          impl_->rejected.load()};
}

}  // namespace sluice
