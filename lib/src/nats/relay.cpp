#include "sluice/relay.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <memory_resource>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "../log_to.hpp"
#include "../prometheus_text.hpp"
#include "backoff.hpp"
#include "broker_return.hpp"
#include "jetstream_client.hpp"
#include "message_headers.hpp"
#include "renewing_client.hpp"
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

nats::ConnectionSettings connection_settings(const RelayOptions& o,
                                             std::function<void()> on_connected) {
  nats::ConnectionSettings settings;
  settings.url = o.nats_url;
  settings.name = "sluice-relay " + o.consumer;
  settings.max_outstanding_acks = o.max_outstanding_acks;
  settings.require_first_connect = false;
  settings.on_connected = std::move(on_connected);
  return settings;
}

Options with_clock(Options options) {
  if (!options.clock) options.clock = system_clock();
  return options;
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
        options(with_clock(std::move(options_in))),
        broker_return(std::make_shared<nats::BrokerReturn>(path, relay_options.consumer, options)),
        connection(connection_settings(relay_options,
                                       [returned = broker_return] { returned->connected(); })),
        backoff(relay_options.min_backoff, relay_options.max_backoff),
        worker(path, options) {
    std::string error;
    if (connection.connected() && !ensure_stream(error))
      log_to(options, LogLevel::kWarn, "relay: cannot ensure the stream yet, will try again",
             {{"stream", relay_options.stream}, {"error", error}});
    ConsumerOptions consumer_options;
    consumer_options.mode = DeliveryMode::kOutsideTransaction;
    consumer_options.ordered = true;
    consumer_options.start_from = StartFrom::kOldest;
    consumer_options.retry = relay_options.retry;
    // One handler for every topic: a batch then holds events of any of them (see
    // Worker::subscribe_batch_topics).
    worker.subscribe_batch_topics(
        relay_options.consumer, relay_options.topics,
        [this](const std::vector<Event>& events) { return relay(events); }, consumer_options);
  }

  // Subjects are made once per topic; subject_for's go in `texts`, which outlives the publish.
  std::string_view subject_of(const Event& event, std::deque<std::string>& texts) {
    if (relay_options.subject_for) return texts.emplace_back(relay_options.subject_for(event));
    auto [subject, added] = subjects.try_emplace(event.topic);
    if (added)
      subject->second = relay_options.subject_prefix.empty()
                            ? event.topic
                            : relay_options.subject_prefix + "." + event.topic;
    return subject->second;
  }

  // Creating the stream waits for the broker when the relay started while it was down.
  bool ensure_stream(std::string& error) {
    if (stream_ready || !relay_options.ensure_stream) return true;
    try {
      connection.client().share_stream(stream_spec(relay_options),
                                       relay_options.update_stream
                                           ? nats::StreamUpdate::kAddSubjects
                                           : nats::StreamUpdate::kVerifyOnly);
      stream_ready = true;
    } catch (const Error& e) {
      error = e.what();
    }
    return stream_ready;
  }

  // Publishes in rounds: each round sends at most one event per key, so a later event of a key
  // is never stored before an earlier one that failed.
  std::vector<Outcome> relay(const std::vector<Event>& events) {
    ++batches;
    // A broker that came back since the last batch starts the backoff afresh.
    const std::uint64_t returns = broker_return->count();
    if (returns != returns_seen) backoff.succeeded();
    returns_seen = returns;
    std::vector<Outcome> outcomes(events.size());
    sent.resize(events.size());
    std::optional<Duration> broker_delay;
    std::string first_broker_error;
    auto broker_failed = [&](const std::string& error) {
      if (!broker_delay) {
        broker_delay = backoff.failed(options.clock->now());
        first_broker_error = error;
      }
      ++broker_errors;
      return Outcome::snooze(*broker_delay);
    };

    std::string unavailable;
    if (!connection.connected()) unavailable = "not connected to NATS at " + relay_options.nats_url;
    if (unavailable.empty() && !ensure_stream(unavailable)) unavailable += " (ensuring stream)";
    if (!unavailable.empty()) {
      for (auto& outcome : outcomes) outcome = broker_failed(unavailable);
      report_broker_trouble(first_broker_error, *broker_delay, events.size());
      return after_return(returns, outcomes);
    }

    // An event's round is the number of events of its key before it in the batch: each round
    // sends at most one event per key. Unkeyed events all go in the first round. Keys are views of
    // the events' keys, which outlive the maps; the maps' nodes come from one arena per batch.
    std::pmr::monotonic_buffer_resource arena;
    std::pmr::unordered_map<std::string_view, std::size_t> events_of_key(&arena);
    std::pmr::unordered_set<std::string_view> held_keys(&arena);
    round_of.assign(events.size(), 0);
    std::size_t last_round = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i].key.empty()) continue;
      round_of[i] = events_of_key[events[i].key]++;
      last_round = std::max(last_round, round_of[i]);
    }
    std::deque<std::string> texts;
    for (std::size_t r = 0; r <= last_round; ++r) {
      std::size_t count = 0;
      for (std::size_t i = 0; i < events.size(); ++i) {
        if (round_of[i] != r) continue;
        const Event& event = events[i];
        if (!event.key.empty() && held_keys.count(event.key)) {
          outcomes[i] = Outcome::snooze(broker_delay.value_or(relay_options.min_backoff));
        } else if (std::string problem = nats::reserved_header_problem(event.headers);
                   !problem.empty()) {
          outcomes[i] = reject(event, problem);
          if (!event.key.empty()) held_keys.insert(event.key);
        } else {
          // Messages are kept from one round and batch to the next, and their header vectors
          // with them, so that a message costs no allocation of its own.
          if (count == messages.size()) messages.emplace_back();
          nats::OutgoingMessage& message = messages[count];
          message.subject = subject_of(event, texts);
          message.msg_id = event.id;
          message.data = event.payload;
          nats::message_headers(event, message.headers, texts);
          sent[count++] = i;
        }
      }
      if (count == 0) continue;
      std::vector<nats::PublishOutcome> published_outcomes =
          connection.client().publish(std::span(messages.data(), count), relay_options.ack_timeout);
      for (std::size_t m = 0; m < count; ++m) {
        const std::size_t i = sent[m];
        const nats::PublishOutcome& result = published_outcomes[m];
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
    return after_return(returns, outcomes);
  }

  // Snoozes of a batch during which the broker came back commit after BrokerReturn made the
  // snoozed events due: they wait only the shortest backoff.
  std::vector<Outcome>& after_return(std::uint64_t returns_before, std::vector<Outcome>& outcomes) {
    if (broker_return->count() == returns_before) return outcomes;
    for (Outcome& outcome : outcomes)
      if (outcome.kind == Outcome::Kind::kSnooze)
        outcome.delay = std::min(outcome.delay, relay_options.min_backoff);
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
            {"batch", batch},
            {"retry_in_ms", delay.count()}});
  }

  RelayOptions relay_options;
  Options options;
  std::shared_ptr<nats::BrokerReturn> broker_return;
  nats::RenewingClient connection;
  bool stream_ready = false;
  // Touched only by the relay's batch handler, which never runs twice at once.
  nats::Backoff backoff;
  std::uint64_t returns_seen = 0;
  std::unordered_map<std::string, std::string> subjects;  // by topic
  std::vector<nats::OutgoingMessage> messages;
  std::vector<std::size_t> round_of;  // by event of the batch
  std::vector<std::size_t> sent;      // the event each message of a round carries
  bool broker_was_failing = false;
  std::atomic<long long> published{0};
  std::atomic<long long> duplicates{0};
  std::atomic<long long> broker_errors{0};
  std::atomic<long long> rejected{0};
  std::atomic<long long> batches{0};
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
          impl_->rejected.load(), impl_->batches.load()};
}

std::string Relay::metrics_text() const {
  const RelayCounters c = counters();
  const std::string labels = prometheus::label("consumer", impl_->relay_options.consumer);
  struct Counter {
    const char* name;
    const char* help;
    long long value;
  };
  const Counter all[] = {
      {"sluice_relay_published_total",
       "Events JetStream acknowledged to this relay process, including the copies it dropped as "
       "duplicates (sluice_relay_duplicates_total).",
       c.published},
      {"sluice_relay_duplicates_total",
       "Publishes JetStream acknowledged as duplicates inside the stream's duplicate window, "
       "without storing them again.",
       c.duplicates},
      {"sluice_relay_broker_errors_total",
       "Publishes that failed for a passing reason (broker down, timeout), tried again later.",
       c.broker_errors},
      {"sluice_relay_rejected_total",
       "Events the broker refused for good (no stream, too large), dead-lettered.", c.rejected},
      {"sluice_relay_batches_total",
       "Batches the relay published, each one commit in the file: published_total over this is "
       "the events a batch carried.",
       c.batches},
  };
  std::string out;
  for (const Counter& counter : all) {
    out += prometheus::family(counter.name, "counter", counter.help);
    out += prometheus::sample(counter.name, labels, static_cast<double>(counter.value));
  }
  return out;
}

}  // namespace sluice
