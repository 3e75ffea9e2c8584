#include "worker_instance.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "sluice/database.hpp"
#include "sluice/error.hpp"

namespace sluice::model {
namespace {

// Does what `scripted` says, as a handler would; the write (if any) came before.
void act(const Scripted& scripted, Context& ctx) {
  switch (scripted.action) {
    case Action::kOk:
      return;
    case Action::kRetry:
      ctx.retry(scripted.error);
      return;
    case Action::kThrowAfterWrite:
      throw std::runtime_error(scripted.error);
    case Action::kDeadLetter:
      ctx.dead_letter(scripted.error);
      return;
    case Action::kThrowPermanent:
      throw PermanentError(scripted.error);
    case Action::kSnooze:
      ctx.snooze(scripted.snooze);
      return;
    case Action::kThrottle:
      // Both ways a handler throttles, the reason as the note when there is one.
      if (scripted.error.empty()) return ctx.throttle(scripted.snooze);
      throw Throttled(scripted.snooze, scripted.error);
  }
}

Outcome outcome_of(const Scripted& scripted) {
  switch (scripted.action) {
    case Action::kOk:
      return Outcome::done();
    case Action::kRetry:
    case Action::kThrowAfterWrite:
      return Outcome::retry(scripted.error);
    case Action::kDeadLetter:
    case Action::kThrowPermanent:
      return Outcome::permanent(scripted.error);
    case Action::kSnooze:
      return Outcome::snooze(scripted.snooze);
    case Action::kThrottle:
      return Outcome::throttle(scripted.snooze, scripted.error);
  }
  return Outcome::done();
}

// What a connection's commit and rollback hooks report to.
struct TransactionWatch {
  CallSink* sink;
  const void* connection;
};

int on_commit(void* watch) {
  auto* w = static_cast<TransactionWatch*>(watch);
  w->sink->on_transaction_end(w->connection, true);
  return 0;
}

void on_rollback(void* watch) {
  auto* w = static_cast<TransactionWatch*>(watch);
  w->sink->on_transaction_end(w->connection, false);
}

}  // namespace

void watch_transaction(sqlite3* handle, CallSink& sink) {
  static std::mutex mutex;
  static std::map<std::pair<CallSink*, sqlite3*>, std::unique_ptr<TransactionWatch>> watches;
  TransactionWatch* watch = nullptr;
  {
    std::lock_guard lock(mutex);
    auto& slot = watches[{&sink, handle}];
    if (!slot) slot = std::make_unique<TransactionWatch>(TransactionWatch{&sink, handle});
    watch = slot.get();
  }
  sqlite3_commit_hook(handle, &on_commit, watch);
  sqlite3_rollback_hook(handle, &on_rollback, watch);
}

void record_application(sqlite3* connection, const std::string& consumer, long long n) {
  sqlite3_stmt* insert = nullptr;
  int rc = sqlite3_prepare_v2(connection, "INSERT INTO model_applied (consumer, n) VALUES (?, ?)",
                              -1, &insert, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(insert, 1, consumer.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 2, n);
    rc = sqlite3_step(insert);
  }
  sqlite3_finalize(insert);
  if (rc != SQLITE_DONE)
    throw std::runtime_error(std::string("model: recording an application: ") +
                             sqlite3_errmsg(connection));
}

void create_applied_table(SQLite::Database& db) {
  db.exec("CREATE TABLE IF NOT EXISTS model_applied (consumer TEXT NOT NULL, n INTEGER NOT NULL)");
}

long long event_number(const Event& event) {
  // Payloads are {"n":<number>}.
  return std::stoll(event.payload.substr(5));
}

WorkerInstance::WorkerInstance(const std::string& path, const SequenceConfig& config,
                               const InstanceConfig& instance, const Options& options,
                               CallSink& sink)
    : db_(open_database(path, options)), counter_(db_), worker_(db_, options) {
  subscribe_handlers(worker_, config, instance, sink);
}

void subscribe_handlers(Worker& worker, const SequenceConfig& config,
                        const InstanceConfig& instance, CallSink& sink) {
  for (const ConsumerConfig& consumer : config.consumers) {
    ConsumerOptions consumer_options;
    consumer_options.ordered = consumer.ordered;
    consumer_options.mode =
        consumer.outside ? DeliveryMode::kOutsideTransaction : DeliveryMode::kInTransaction;
    const std::string name = consumer.name;
    const int generation = consumer.generation;
    consumer_options.start_from = consumer.oldest ? StartFrom::kOldest : StartFrom::kNow;
    consumer_options.breaker = consumer.breaker;
    const BatchHandler batch_handler = [&sink, name, generation](const std::vector<Event>& events) {
      const std::vector<Scripted> scripted = sink.on_batch(name, generation, events);
      if (!scripted.empty() && scripted.front().whole_batch) {
        if (scripted.front().action == Action::kThrottle)
          throw Throttled(scripted.front().snooze, scripted.front().error);
        throw std::runtime_error(scripted.front().error);
      }
      std::vector<Outcome> outcomes;
      for (const Scripted& s : scripted) outcomes.push_back(outcome_of(s));
      return outcomes;
    };
    std::vector<std::string> shared_topics;
    for (const std::string& topic : consumer.topics) {
      if (!instance.handles_topic(name, topic)) continue;
      if (consumer.batch_topics.count(topic) > 0 && consumer.shared_batch_handler) {
        shared_topics.push_back(topic);
      } else if (consumer.batch_topics.count(topic) > 0) {
        worker.subscribe_batch(name, topic, batch_handler, consumer_options);
      } else if (consumer.outside) {
        worker.subscribe(
            name, topic,
            [&sink, name, generation](const Event& event, Context& ctx) {
              act(sink.on_call(name, generation, event, ctx.attempt(), nullptr), ctx);
            },
            consumer_options);
      } else {
        worker.subscribe(
            name, topic,
            [&sink, name, generation](const Event& event, Context& ctx) {
              // Installed at every call: the connection (a Worker's own) is known only here.
              watch_transaction(ctx.db().getHandle(), sink);
              const Scripted scripted =
                  sink.on_call(name, generation, event, ctx.attempt(), ctx.db().getHandle());
              if (scripted.writes)
                record_application(ctx.db().getHandle(), name, event_number(event));
              act(scripted, ctx);
            },
            consumer_options);
      }
    }
    if (!shared_topics.empty())
      worker.subscribe_batch_topics(name, shared_topics, batch_handler, consumer_options);
  }
}

}  // namespace sluice::model
