#include "sluice/ingester.hpp"

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "../crash_point.hpp"
#include "../log_to.hpp"
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
      messages = consumer().fetch(ingester_options.fetch_batch, ingester_options.fetch_wait);
    } catch (const nats::NatsError&) {
      pull_consumer.reset();
      throw;
    }
    if (messages.empty()) return {};

    IngestResult result;
    std::vector<nats::FetchedMessage*> to_ack;
    std::vector<nats::FetchedMessage*> to_terminate;
    // The handled message with the highest stream sequence: its ack settles the batch.
    nats::FetchedMessage* highest = nullptr;
    auto handled = [&](std::vector<nats::FetchedMessage*>& settle_as, nats::FetchedMessage& m) {
      settle_as.push_back(&m);
      if (highest == nullptr || m.stream_seq() > highest->stream_seq()) highest = &m;
    };
    auto not_an_event = [&](nats::FetchedMessage& message, const InvalidArgument& e) {
      ++malformed;
      handled(to_terminate, message);
      log_to(options, LogLevel::kError, "ingester: message is not a sluice event, terminated",
             {{"durable", ingester_options.durable},
              {"stream_seq", std::to_string(message.stream_seq())},
              {"error", e.what()}});
    };
    std::uint64_t new_position = position;
    bool gap = false;
    {
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
        if (new_position != 0 && seq != new_position + 1 && !accept_any_next) {
          gap = true;
          break;
        }
        accept_any_next = false;
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
    }
    position = new_position;
    SLUICE_CRASH_POINT("ingest-before-ack");
    // The highest message's ack waits for the server, so a batch is settled when poll()
    // returns. Under AckAll it settles every message before it too, the malformed ones
    // committed as skipped; an AckExplicit durable needs each one settled.
    if (!pull_consumer->acks_cumulatively()) {
      for (auto* message : to_terminate)
        if (message != highest) settle(*message, &nats::FetchedMessage::terminate);
      for (auto* message : to_ack)
        if (message != highest) settle(*message, &nats::FetchedMessage::ack);
    }
    if (highest != nullptr) settle(*highest, &nats::FetchedMessage::ack_confirmed);
    received += result.received;
    duplicates += result.duplicates;
    if (gap) {
      // Messages between the position and what came were fetched by an ingester that never
      // committed them; start delivery over right after the position to keep stream order.
      log_to(options, LogLevel::kInfo, "ingester: restarting delivery after the ingested position",
             {{"durable", ingester_options.durable}, {"stream_seq", std::to_string(position + 1)}});
      accept_any_next = true;
      pull_consumer->restart_at(position + 1);
    }
    return result;
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
      try {
        poll();
        backoff.succeeded();
      } catch (const Error& e) {
        ++broker_errors;
        pause = backoff.failed();
        log_to(options, LogLevel::kWarn, "ingester: fetch failed, trying again",
               {{"durable", ingester_options.durable},
                {"error", e.what()},
                {"retry_in_ms", std::to_string(pause.count())}});
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
  std::atomic<long long> received{0};
  std::atomic<long long> duplicates{0};
  std::atomic<long long> malformed{0};
  std::atomic<long long> broker_errors{0};

  std::mutex mutex;
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

IngestResult Ingester::poll() { return impl_->poll(); }

IngesterCounters Ingester::counters() const {
  return {impl_->received.load(), impl_->duplicates.load(), impl_->malformed.load(),
          impl_->broker_errors.load()};
}

}  // namespace sluice
