#include "sluice/ingester.hpp"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "../crash_point.hpp"
#include "../exclusive_use.hpp"
#include "../log_to.hpp"
#include "../prometheus_text.hpp"
#include "../sqlite_error.hpp"
#include "backoff.hpp"
#include "jetstream_client.hpp"
#include "message_headers.hpp"
#include "pull_consumer.hpp"
#include "renewing_client.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/outbox.hpp"

namespace sluice {
namespace {

void validate(const IngesterOptions& o) {
  if (o.stream.empty()) throw InvalidArgument("ingester: IngesterOptions::stream is empty");
  if (o.durable.empty()) throw InvalidArgument("ingester: IngesterOptions::durable is empty");
  if (o.fetch_batch < 1)
    throw InvalidArgument("ingester: IngesterOptions::fetch_batch must be >= 1");
}

nats::ConnectionSettings connection_settings(const IngesterOptions& o) {
  nats::ConnectionSettings settings;
  settings.url = o.nats_url;
  settings.name = "sluice-ingester " + o.durable;
  settings.require_first_connect = false;
  return settings;
}

}  // namespace

struct Ingester::Impl {
  Impl(const std::string& path, IngesterOptions ingester_options_in, Options options_in)
      : ingester_options(std::move(ingester_options_in)),
        options(std::move(options_in)),
        db(open_database(path, options)),
        outbox(db, options),
        connection(connection_settings(ingester_options)),
        backoff(ingester_options.min_backoff, ingester_options.max_backoff) {
    SQLite::Statement query(db,
                            "SELECT stream_seq FROM sluice_nats_positions"
                            " WHERE stream = ? AND durable = ?");
    query.bind(1, ingester_options.stream);
    query.bind(2, ingester_options.durable);
    if (query.executeStep()) position = query.getColumn(0).getInt64();
  }

  nats::PullConsumer& consumer() {
    if (!pull_consumer) {
      if (!connection.connected())
        throw nats::NatsError("connect to " + ingester_options.nats_url,
                              NATS_CONNECTION_DISCONNECTED);
      nats::PullConsumerSpec spec;
      spec.stream = ingester_options.stream;
      spec.durable = ingester_options.durable;
      spec.ack_wait = ingester_options.ack_wait;
      spec.max_ack_pending = ingester_options.fetch_batch * 4;
      pull_consumer = std::make_unique<nats::PullConsumer>(connection.client(), spec);
    }
    return *pull_consumer;
  }

  IngestResult poll() {
    std::vector<nats::FetchedMessage> messages;
    try {
      nats::PullConsumer& source = consumer();
      if (restart_before_fetch) {
        source.restart_at(position + 1);
        accept_any_next = true;
        restart_before_fetch = false;
      }
      messages = source.fetch(ingester_options.fetch_batch, ingester_options.fetch_wait);
    } catch (const nats::NatsError&) {
      pull_consumer.reset();
      throw;
    }
    // JetStream counts the messages after each one it delivers; a fetch that found none is
    // caught up.
    pending_messages = messages.empty() ? 0 : static_cast<long long>(messages.back().pending());
    if (messages.empty()) return {};

    IngestResult result;
    std::vector<nats::FetchedMessage*> to_ack;
    std::vector<nats::FetchedMessage*> to_terminate;
    auto handled = [](std::vector<nats::FetchedMessage*>& settle_as, nats::FetchedMessage& m) {
      settle_as.push_back(&m);
    };
    // Counted once committed: a fetch whose transaction fails comes again.
    long long malformed_in_fetch = 0;
    auto not_an_event = [&](nats::FetchedMessage& message, const InvalidArgument& e) {
      ++malformed_in_fetch;
      handled(to_terminate, message);
      log_to(options, LogLevel::kError, "ingester: message is not a sluice event, terminated",
             {{"durable", ingester_options.durable},
              {"stream_seq", message.stream_seq()},
              {"error", e.what()}});
    };
    std::uint64_t new_position = position;
    bool gap = false;
    bool accept_any = accept_any_next;
    try {
      guarded("ingest a fetch", [&] {
        SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
        std::vector<nats::FetchedMessage*> carriers;
        carriers.reserve(messages.size());
        for (auto& message : messages) {
          const std::uint64_t seq = message.stream_seq();
          if (seq != 0 && seq <= new_position) {
            ++result.duplicates;
            handled(to_ack, message);
            continue;
          }
          if (new_position != 0 && seq != new_position + 1 && !accept_any) {
            gap = true;
            break;
          }
          accept_any = false;
          try {
            if (carriers.size() == events.size()) events.emplace_back();
            nats::event_from_message(message.get(), events[carriers.size()]);
            carriers.push_back(&message);
          } catch (const InvalidArgument& e) {
            not_an_event(message, e);
          }
          new_position = seq;
        }
        // One batch writes the events several to a statement; only when one of them is invalid
        // (refused before anything is written) does each go alone, to terminate just that one.
        events.resize(carriers.size());
        std::vector<EnqueueResult> stored;
        try {
          stored = outbox.receive_batch(events);
        } catch (const InvalidArgument&) {
          stored.clear();
        }
        for (std::size_t i = 0; i < carriers.size(); ++i) {
          try {
            const bool duplicate =
                i < stored.size() ? stored[i].duplicate() : outbox.receive(events[i]).duplicate();
            ++(duplicate ? result.duplicates : result.received);
            handled(to_ack, *carriers[i]);
          } catch (const InvalidArgument& e) {
            not_an_event(*carriers[i], e);
          }
        }
        SQLite::Statement save(db,
                               "INSERT INTO sluice_nats_positions (stream, durable, stream_seq)"
                               " VALUES (?, ?, ?) ON CONFLICT (stream, durable)"
                               " DO UPDATE SET stream_seq = excluded.stream_seq");
        save.bind(1, ingester_options.stream);
        save.bind(2, ingester_options.durable);
        save.bind(3, static_cast<std::int64_t>(new_position));
        save.exec();
        transaction.commit();
      });
    } catch (const DatabaseError&) {
      // A storage error (the file locked past the busy timeout, I/O, full): nothing was
      // acknowledged. The next poll has delivery start over right after the position rather than
      // wait ack_wait for these messages to come back behind later ones.
      restart_before_fetch = true;
      throw;
    }
    position = new_position;
    accept_any_next = accept_any;
    SLUICE_CRASH_POINT("ingest-before-ack");
    // Malformed messages are terminated, so that JetStream announces each one (a MSG_TERMINATED
    // advisory) instead of an ack settling them unseen; first, since under AckAll an ack past
    // them would settle them before their terminate arrives. Under AckAll the ack of the last
    // stored message settles every one before it; an AckExplicit durable needs each acked. That
    // last ack waits for the server, which has then processed every earlier terminate and ack of
    // this connection, so a batch is settled when poll() returns.
    for (auto* message : to_terminate) settle(*message, &nats::FetchedMessage::terminate);
    nats::FetchedMessage* last_ack = nullptr;
    for (auto* message : to_ack)
      if (last_ack == nullptr || message->stream_seq() > last_ack->stream_seq()) last_ack = message;
    if (!pull_consumer->acks_cumulatively()) {
      for (auto* message : to_ack)
        if (message != last_ack) settle(*message, &nats::FetchedMessage::ack);
    }
    if (last_ack != nullptr) {
      settle(*last_ack, &nats::FetchedMessage::ack_confirmed);
    } else if (!to_terminate.empty() &&
               natsConnection_Flush(connection.client().connection()) != NATS_OK) {
      ++broker_errors;
    }
    received += result.received;
    duplicates += result.duplicates;
    malformed += malformed_in_fetch;
    if (gap) {
      // Messages between the position and what came were fetched by an ingester that never
      // committed them; start delivery over right after the position to keep stream order.
      log_to(options, LogLevel::kInfo, "ingester: restarting delivery after the ingested position",
             {{"durable", ingester_options.durable}, {"stream_seq", position + 1}});
      accept_any_next = true;
      pull_consumer->restart_at(position + 1);
    }
    return result;
  }

  // Logs `e` and returns how long to wait before the next poll.
  Duration backed_off(const char* message, const std::exception& e) {
    // The pause is waited in real time, whatever clock the options carry.
    const Duration pause = backoff.failed(SystemClock().now());
    log_to(options, LogLevel::kWarn, message,
           {{"durable", ingester_options.durable},
            {"error", e.what()},
            {"retry_in_ms", pause.count()}});
    return pause;
  }

  // A lost acknowledgement only brings a redelivery, which the position turns into a duplicate.
  void settle(nats::FetchedMessage& message, void (nats::FetchedMessage::*how)()) {
    try {
      (message.*how)();
    } catch (const nats::NatsError&) {
      ++broker_errors;
    }
  }

  void run() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      lock.unlock();
      Duration pause{0};
      // No error ends the loop: it would end the process (an exception leaving the thread).
      try {
        poll();
        backoff.succeeded();
      } catch (const nats::NatsError& e) {
        ++broker_errors;
        pause = backed_off("ingester: fetch failed, trying again", e);
      } catch (const std::exception& e) {
        pause = backed_off("ingester: could not store a fetch, trying again", e);
      }
      lock.lock();
      if (pause.count() > 0) wake.wait_for(lock, pause, [this] { return stopping; });
    }
  }

  IngesterOptions ingester_options;
  Options options;
  SQLite::Database db;
  Outbox outbox;
  // Replaced only while no pull consumer is built on it.
  nats::RenewingClient connection;
  std::unique_ptr<nats::PullConsumer> pull_consumer;
  nats::Backoff backoff;
  std::uint64_t position = 0;
  // The last fetch's events, whose memory the next fetch's reuse.
  std::vector<NewEvent> events;
  // Right after a restart of delivery the first message is the stream's next one, whatever its
  // sequence (the stream may have dropped messages in between).
  bool accept_any_next = false;
  // Set when a fetch could not be stored, so that the next poll restarts delivery.
  bool restart_before_fetch = false;
  std::atomic<long long> received{0};
  std::atomic<long long> duplicates{0};
  std::atomic<long long> malformed{0};
  std::atomic<long long> broker_errors{0};
  std::atomic<long long> pending_messages{0};

  std::mutex mutex;
  // Held by a caller's poll(): one connection, one fetch at a time.
  ExclusiveUse polling;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
};

Ingester::Ingester(const std::string& path, IngesterOptions ingester_options, Options options) {
  validate(ingester_options);
  impl_ = std::make_unique<Impl>(path, std::move(ingester_options), std::move(options));
}

Ingester::~Ingester() { stop(); }

void Ingester::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->thread.joinable()) return;
  if (impl_->polling.busy()) {
    throw InvalidArgument(
        "sluice: Ingester::start: refused, another thread is in poll() on this ingester");
  }
  impl_->stopping = false;
  impl_->thread = std::thread([this] { impl_->run(); });
}

void Ingester::stop() {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->thread.joinable()) return;
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  impl_->thread.join();
}

IngestResult Ingester::poll() {
  std::optional<ExclusiveUse::Scope> use;
  {
    // Checked and entered under the mutex start() takes, so that start() cannot slip in between.
    std::lock_guard lock(impl_->mutex);
    if (impl_->thread.joinable()) {
      throw InvalidArgument(
          "sluice: Ingester::poll: refused, the ingester is started (its own "
          "thread polls until stop())");
    }
    use.emplace(impl_->polling, "sluice: Ingester::poll");
  }
  return impl_->poll();
}

IngesterCounters Ingester::counters() const {
  return {impl_->received.load(), impl_->duplicates.load(), impl_->malformed.load(),
          impl_->broker_errors.load()};
}

std::string Ingester::metrics_text() const {
  const IngesterCounters c = counters();
  const std::string labels = prometheus::label("stream", impl_->ingester_options.stream) + "," +
                             prometheus::label("durable", impl_->ingester_options.durable);
  struct Figure {
    const char* name;
    const char* type;
    const char* help;
    long long value;
  };
  const Figure all[] = {
      {"sluice_ingest_received_total", "counter",
       "Messages this ingester process stored in the file as new events.", c.received},
      {"sluice_ingest_duplicates_total", "counter",
       "Messages whose event the file already had, acknowledged without effect.", c.duplicates},
      {"sluice_ingest_malformed_total", "counter",
       "Messages that are not sluice events (a header missing or unreadable, a payload sluice "
       "refuses), terminated at the broker.",
       c.malformed},
      {"sluice_ingest_broker_errors_total", "counter",
       "Fetches or acknowledgements that failed because of the broker.", c.broker_errors},
      {"sluice_ingest_pending_messages", "gauge",
       "Messages in the stream after the last one fetched, as JetStream counted them at that "
       "fetch: how far the ingester is behind the stream.",
       impl_->pending_messages.load()},
  };
  std::string out;
  for (const Figure& figure : all) {
    out += prometheus::family(figure.name, figure.type, figure.help);
    out += prometheus::sample(figure.name, labels, static_cast<double>(figure.value));
  }
  return out;
}

}  // namespace sluice
