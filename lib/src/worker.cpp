#include "sluice/worker.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "commit_signal.hpp"
#include "consumer_registry.hpp"
#include "data_version.hpp"
#include "deliverer.hpp"
#include "lease_keeper.hpp"
#include "lock_sharing.hpp"
#include "log_to.hpp"
#include "saturating_time.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// Backoff of the worker loop itself after a storage error (disk full, I/O error): no handler
// attempt is spent, the claim in hand is retried.
constexpr Duration kFirstStorageBackoff = std::chrono::milliseconds(10);
constexpr Duration kMaxStorageBackoff = std::chrono::seconds(1);

// An idle worker reads PRAGMA data_version every poll interval (any commit by another connection
// changes it) and looks at its consumers again only when it changed, a commit in this process
// signalled, a retry or delay fell due, or every this many poll intervals (for what no commit
// announces: a worker that died holding a claim, a clock stepped forward). Looking costs about
// ten statements per consumer; reading data_version, one.
constexpr int kIdleChecksEvery = 10;

bool same_options(const ConsumerOptions& a, const ConsumerOptions& b) {
  return a.mode == b.mode && a.ordered == b.ordered && a.start_from == b.start_from &&
         a.retry.has_value() == b.retry.has_value();
}

}  // namespace

struct Worker::Impl {
  struct Consumer {
    ConsumerSpec spec;
    std::optional<Claim> in_hand;
  };

  Impl(SQLite::Database* borrowed, const std::string& path, Options opts)
      : options(std::move(opts)), clock(options.clock ? options.clock : system_clock()) {
    options.validate();
    if (borrowed == nullptr) {
      owned.emplace(open_database(path, options));
      db = &*owned;
    } else {
      db = borrowed;
      ensure_schema(*db);
    }
    deliverer =
        guarded("prepare worker", [&] { return std::make_unique<Deliverer>(*db, options); });
    const char* file = sqlite3_db_filename(db->getHandle(), "main");
    const bool on_file = file != nullptr && *file != '\0';
    // A file no other connection can open (":memory:") has nobody to keep claims from.
    if (on_file) lease_keeper = std::make_unique<LeaseKeeper>(file, deliverer->owner(), options);
    signal = CommitSignal::of(*db);
    guarded("prepare worker", [&] {
      data_version.emplace(*db);
      lock_sharing.emplace(*data_version, on_file);
    });
  }

  Consumer& consumer_for(const std::string& name, const std::string& topic,
                         const ConsumerOptions& consumer_options) {
    if (name.empty()) throw InvalidArgument("sluice: subscribe: the consumer name is empty");
    if (topic.empty()) throw InvalidArgument("sluice: subscribe: the topic is empty");
    if (running.load()) throw InvalidArgument("sluice: subscribe: the worker is running");
    const RetryPolicy retry = consumer_options.retry.value_or(options.retry);
    retry.validate();
    auto found = std::find_if(consumers.begin(), consumers.end(),
                              [&](const Consumer& c) { return c.spec.name == name; });
    if (found != consumers.end()) {
      if (!same_options(found->spec.options, consumer_options)) {
        throw InvalidArgument("sluice: subscribe: consumer '" + name +
                              "' was registered with other options");
      }
      if (found->spec.handlers.count(topic) + found->spec.batch_handlers.count(topic) > 0) {
        throw InvalidArgument("sluice: subscribe: consumer '" + name +
                              "' already has a handler for topic '" + topic + "'");
      }
    }
    const std::int64_t id = guarded("subscribe", [&] {
      return record_subscription(*db, name, topic, consumer_options, retry, clock->now());
    });
    if (found != consumers.end()) return *found;
    Consumer& added = consumers.emplace_back();
    added.spec.id = id;
    added.spec.name = name;
    added.spec.options = consumer_options;
    added.spec.retry = retry;
    return added;
  }

  // One step for every consumer. Returns whether anything moved.
  bool round(bool stopping, DrainResult& totals) {
    bool progressed = false;
    for (Consumer& consumer : consumers) {
      const auto began = std::chrono::steady_clock::now();
      // Every statement of the round, the lock-sharing gap's data_version read included, raises
      // sluice::DatabaseError on a storage fault, never SQLite's own exception.
      const StepResult step = guarded("deliver", [&] {
        StepResult stepped = deliverer->step(consumer.spec, consumer.in_hand, stopping);
        lock_sharing->after_step(began, stepped.held_write_lock);
        return stepped;
      });
      progressed = progressed || step.progressed;
      totals.delivered += step.delivered;
      totals.retried += step.retried + step.snoozed;
      totals.dead_lettered += step.dead_lettered;
    }
    if (lease_keeper) lease_keeper->hold(holds_claims());
    return progressed;
  }

  bool holds_claims() const {
    return std::any_of(consumers.begin(), consumers.end(),
                       [](const Consumer& c) { return c.in_hand.has_value(); });
  }

  // How long an idle worker may sleep before it looks at its consumers again: until a retry or
  // delay falls due, at most kIdleChecksEvery poll intervals. Commits end the sleep sooner.
  std::chrono::steady_clock::duration idle_timeout() {
    Duration timeout = options.poll_interval * kIdleChecksEvery;
    const TimePoint now = clock->now();
    for (Consumer& consumer : consumers) {
      if (auto due = deliverer->next_due(consumer.spec)) {
        timeout = std::min(timeout, std::max(Duration(0), sub_saturating(*due, now)));
      }
    }
    return timeout;
  }

  void log_error(const char* message, const std::exception& e) {
    log_to(options, LogLevel::kError, message, {{"error", e.what()}});
  }

  void run() {
    Duration storage_backoff = kFirstStorageBackoff;
    while (!stop_requested.load()) {
      DrainResult ignored;
      const std::uint64_t seen_generation = signal ? signal->generation() : 0;
      try {
        const long long version_before = data_version->read();
        if (round(false, ignored)) {
          storage_backoff = kFirstStorageBackoff;
          continue;
        }
        // Idle: sleep until a commit in this process, another process's commit (data_version),
        // a retry falling due, or stop().
        const auto deadline = std::chrono::steady_clock::now() + idle_timeout();
        while (!stop_requested.load() && std::chrono::steady_clock::now() < deadline) {
          const auto slice = std::min<std::chrono::steady_clock::duration>(
              deadline - std::chrono::steady_clock::now(), options.poll_interval);
          if (signal) {
            signal->wait(seen_generation, slice);
            if (signal->generation() != seen_generation) break;
          } else {
            std::unique_lock lock(wake_mutex);
            wake.wait_for(lock, slice, [&] { return stop_requested.load(); });
          }
          if (data_version->read() != version_before) break;
        }
        storage_backoff = kFirstStorageBackoff;
      } catch (const std::exception& e) {
        log_error("worker step failed; backing off", e);
        std::unique_lock lock(wake_mutex);
        wake.wait_for(lock, storage_backoff, [&] { return stop_requested.load(); });
        storage_backoff = std::min(kMaxStorageBackoff, storage_backoff * 2);
      }
    }
    finish_claims();
  }

  // Finishes every claim in hand, then gives back whatever could not be finished.
  void finish_claims() {
    try {
      DrainResult ignored;
      while (holds_claims() && round(true, ignored)) {
      }
    } catch (const std::exception& e) {
      log_error("worker could not finish its claims on stop", e);
    }
    for (Consumer& consumer : consumers) {
      try {
        deliverer->release(consumer.spec, consumer.in_hand);
      } catch (const std::exception& e) {
        log_error("worker could not release its claim on stop", e);
      }
    }
    if (lease_keeper) lease_keeper->hold(holds_claims());
  }

  Options options;
  std::shared_ptr<Clock> clock;
  std::optional<SQLite::Database> owned;
  SQLite::Database* db = nullptr;
  std::vector<Consumer> consumers;
  std::unique_ptr<Deliverer> deliverer;
  std::unique_ptr<LeaseKeeper> lease_keeper;  // null for a file only this process can see
  std::optional<DataVersion> data_version;
  std::optional<LockSharing> lock_sharing;
  CommitSignal* signal = nullptr;

  std::mutex lifecycle_mutex;
  std::thread thread;
  std::atomic<bool> running{false};
  std::atomic<bool> stop_requested{false};
  std::mutex wake_mutex;
  std::condition_variable wake;
};

Worker::Worker(const std::string& path, Options options)
    : impl_(std::make_unique<Impl>(nullptr, path, std::move(options))) {}

Worker::Worker(SQLite::Database& db, Options options)
    : impl_(std::make_unique<Impl>(&db, std::string(), std::move(options))) {}

Worker::~Worker() {
  stop();
  // A worker that only drained may hold a claim after an error: give it back.
  for (auto& consumer : impl_->consumers) {
    try {
      impl_->deliverer->release(consumer.spec, consumer.in_hand);
    } catch (const std::exception& e) {
      impl_->log_error("worker could not release its claim on destruction", e);
    }
  }
}

void Worker::subscribe(const std::string& consumer, const std::string& topic, Handler handler,
                       const ConsumerOptions& options) {
  if (!handler) throw InvalidArgument("sluice: subscribe: the handler is empty");
  impl_->consumer_for(consumer, topic, options).spec.handlers[topic] = std::move(handler);
}

void Worker::subscribe_batch(const std::string& consumer, const std::string& topic,
                             BatchHandler handler, ConsumerOptions options) {
  if (!handler) throw InvalidArgument("sluice: subscribe: the handler is empty");
  if (options.mode != DeliveryMode::kOutsideTransaction) {
    throw InvalidArgument("sluice: subscribe_batch: consumer '" + consumer +
                          "' must run outside the transaction (DeliveryMode::kOutsideTransaction)");
  }
  impl_->consumer_for(consumer, topic, options).spec.batch_handlers[topic] = std::move(handler);
}

void Worker::start() {
  std::lock_guard lock(impl_->lifecycle_mutex);
  if (impl_->running.load()) return;
  if (!impl_->owned) {
    throw TransactionError(
        "sluice: start: this worker borrows the caller's connection, which must not be used from "
        "another thread; use run_until_idle() or construct the worker from a path");
  }
  impl_->stop_requested = false;
  impl_->running = true;
  impl_->thread = std::thread([this] { impl_->run(); });
}

void Worker::stop() {
  std::lock_guard lock(impl_->lifecycle_mutex);
  if (!impl_->running.load()) return;
  impl_->stop_requested = true;
  if (impl_->signal) impl_->signal->raise();
  impl_->wake.notify_all();
  impl_->thread.join();
  impl_->running = false;
}

DrainResult Worker::run_until_idle() {
  if (impl_->running.load()) {
    throw InvalidArgument("sluice: run_until_idle: the worker is running on its own thread");
  }
  DrainResult totals;
  while (impl_->round(false, totals)) {
  }
  return totals;
}

SQLite::Database& Worker::db() { return *impl_->db; }

}  // namespace sluice
