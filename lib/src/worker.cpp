#include "sluice/worker.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "commit_signal.hpp"
#include "connection_clock.hpp"
#include "consumer_registry.hpp"
#include "data_version.hpp"
#include "deliverer.hpp"
#include "file_watch.hpp"
#include "idle_check.hpp"
#include "json_string.hpp"
#include "lease_keeper.hpp"
#include "lock_sharing.hpp"
#include "log_to.hpp"
#include "read_transaction.hpp"
#include "saturating_time.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sqlite_error.hpp"
#include "wake_order.hpp"
#include "write_transaction.hpp"

namespace sluice {
namespace {

// Backoff of the worker loop itself after a storage error (disk full, I/O error): no handler
// attempt is spent, the claim in hand is retried.
constexpr Duration kFirstStorageBackoff = std::chrono::milliseconds(10);
constexpr Duration kMaxStorageBackoff = std::chrono::seconds(1);

// An idle worker sleeps until a commit (the file watch, the commit signal, PRAGMA data_version),
// stop(), or the earliest due retry or delay (IdleCheck), but at most this many poll intervals at
// a stretch (FileWatch::kSafetyNetPolls while the kernel watches the file: each stretch's end is a
// wake, the largest part of an idle worker's CPU), after which it reads data_version (a wake the
// file watch missed) and the clock (one stepped past a due time). It looks at its consumers
// again, about ten statements each, only if one of those says so, or, while another worker holds
// a claim of its consumers, after a stretch of this many poll intervals, watched or not (a worker
// that died holding a claim announces nothing, and its claim's takeover is bounded by it).
constexpr int kIdleChecksEvery = 10;

// A file-watch event may arrive before the commit that caused it is visible (the WAL is written
// before the commit is published in the shared-memory index; a writer preempted in between
// publishes later) or come from this worker's own commits and checkpoints (in the first round
// after a wake; later rounds run with the watch muted). When neither
// data_version nor the commit signal changed, the worker looks again after kFirstPublishPause,
// then twice as long each time (at once on a newer event), this long in all after the last event,
// before it sleeps until the next one. The writer publishes microseconds after its last WAL write,
// and a first pause of 1 ms made that the largest part of a cross-process wake's p99.
constexpr auto kFirstPublishPause = std::chrono::microseconds(62);
constexpr auto kPublishPatience = std::chrono::milliseconds(127);

// Where each subscription starts (start_from) is the subscription's own, not the consumer's.
// What differs between `had` (an earlier subscription of this worker) and `asked`, beyond what
// the file's record compares; empty when nothing does.
std::string option_differences(const ConsumerOptions& had, const ConsumerOptions& asked) {
  std::string out;
  const auto add = [&out](const std::string& what, const char* was, const char* now) {
    out += (out.empty() ? "" : ", ") + what + " " + was + " here before, " + now + " now";
  };
  const auto mode = [](DeliveryMode m) {
    return m == DeliveryMode::kInTransaction ? "in-transaction" : "outside-transaction";
  };
  if (had.mode != asked.mode) add("mode", mode(had.mode), mode(asked.mode));
  if (had.ordered != asked.ordered)
    add("ordered", had.ordered ? "true" : "false", asked.ordered ? "true" : "false");
  if (had.retry.has_value() != asked.retry.has_value())
    add("retry policy", had.retry ? "its own" : "the worker's",
        asked.retry ? "its own" : "the worker's");
  return out;
}

}  // namespace

struct Worker::Impl {
  struct Consumer {
    ConsumerSpec spec;
    std::optional<Claim> in_hand;
  };

  Impl(SQLite::Database* borrowed, const std::string& path, Options opts)
      : options(std::move(opts)) {
    options.validate();
    if (borrowed == nullptr) {
      owned.emplace(open_database(path, options));
      db = &*owned;
    } else {
      db = borrowed;
      ensure_schema(*db);
    }
    // The deliverer and the lease keeper read the clock from these options.
    options.clock = clock_for(*db, options);
    clock = options.clock;
    deliverer =
        guarded("prepare worker", [&] { return std::make_unique<Deliverer>(*db, options); });
    const char* file = sqlite3_db_filename(db->getHandle(), "main");
    const bool on_file = file != nullptr && *file != '\0';
    // A file no other connection can open (":memory:") has nobody to keep claims from.
    if (on_file) {
      lease_keeper = std::make_unique<LeaseKeeper>(file, deliverer->owner(), options);
      file_watch = std::make_unique<FileWatch>(file);
    }
    signal = CommitSignal::of(*db);
    guarded("prepare worker", [&] {
      data_version.emplace(*db);
      lock_sharing.emplace(*data_version, signal);
    });
    // Last: nothing may throw after it, or the signal would keep a watch that is gone.
    if (signal && file_watch) signal->add_watch(file_watch.get());
  }

  ~Impl() {
    if (signal && file_watch) signal->remove_watch(file_watch.get());
  }

  Consumer& consumer_for(const std::string& name, const std::string& topic,
                         const ConsumerOptions& consumer_options) {
    if (name.empty()) throw InvalidArgument("sluice: subscribe: the consumer name is empty");
    if (topic.empty()) throw InvalidArgument("sluice: subscribe: the topic is empty");
    if (running.load() || draining.load()) {
      throw InvalidArgument("sluice: subscribe: the worker is running");
    }
    const RetryPolicy retry = consumer_options.retry.value_or(options.retry);
    retry.validate();
    if (consumer_options.breaker) consumer_options.breaker->validate();
    auto found = std::find_if(consumers.begin(), consumers.end(),
                              [&](const Consumer& c) { return c.spec.name == name; });
    if (found != consumers.end()) {
      if (const std::string differ = option_differences(found->spec.options, consumer_options);
          !differ.empty()) {
        throw InvalidArgument("sluice: subscribe: consumer '" + name +
                              "' was registered with other options: " + differ);
      }
      if (found->spec.handlers.count(topic) + found->spec.batch_handlers.count(topic) > 0) {
        throw InvalidArgument("sluice: subscribe: consumer '" + name +
                              "' already has a handler for topic '" + topic + "'");
      }
    }
    const std::int64_t id = guarded("subscribe", [&] {
      return record_subscription(*db, name, topic, RecordedOptions::of(consumer_options, retry),
                                 consumer_options.start_from, clock->now());
    });
    if (found != consumers.end()) return *found;
    Consumer& added = consumers.emplace_back();
    added.spec.id = id;
    added.spec.name = name;
    added.spec.options = consumer_options;
    added.spec.retry = retry;
    record_consumer_names();
    return added;
  }

  // One step for every consumer; those with the ids `first` (WakeOrder) go first, and deliver
  // what they claim in the same round. Returns whether anything moved.
  bool round(bool stopping, DrainResult& totals,
             const std::optional<std::vector<std::int64_t>>& woken = std::nullopt) {
    bool progressed = false;
    static const std::vector<std::int64_t> kNone;
    const std::vector<std::int64_t>& first = woken ? *woken : kNone;
    std::vector<bool> stepped(woken ? consumers.size() : 0);
    for (const std::int64_t id : first) {
      const auto found = std::find_if(consumers.begin(), consumers.end(),
                                      [&](const Consumer& c) { return c.spec.id == id; });
      if (found == consumers.end()) continue;
      stepped[found - consumers.begin()] = true;
      // A claim taken is delivered at the consumer's next step: that, too, before the others.
      if (step(*found, stopping, totals)) {
        progressed = true;
        if (found->in_hand) step(*found, stopping, totals);
      }
    }
    if (woken) {
      // The others have no new event of their topics: their cursors move past the new events in
      // one write, where each one's step would take a write of its own (with 100 consumers, the
      // next event waited behind 99 commits).
      std::vector<std::int64_t> others;
      for (std::size_t i = 0; i < consumers.size(); ++i) {
        if (!stepped[i] && !consumers[i].in_hand) others.push_back(consumers[i].spec.id);
      }
      if (!others.empty()) guarded("deliver", [&] { wake_order->skip_past_others(others); });
    }
    // Which of the rest may have anything to do, asked in one read transaction: with 100
    // consumers and nothing for most, each one's own reads cost a read transaction apiece, and a
    // woken worker's next wake waited for them.
    std::vector<bool> may_step(consumers.size(), true);
    if (consumers.size() > 1 && !stopping) {
      guarded("deliver", [&] {
        ReadTransaction read(*db);
        for (std::size_t i = 0; i < consumers.size(); ++i) {
          if ((stepped.empty() || !stepped[i]) && !consumers[i].in_hand)
            may_step[i] = deliverer->may_step(consumers[i].spec);
        }
      });
    }
    for (std::size_t i = 0; i < consumers.size(); ++i) {
      if ((!stepped.empty() && stepped[i]) || !may_step[i]) continue;
      progressed = step(consumers[i], stopping, totals) || progressed;
    }
    forget_gone_consumers();
    hold_leases();
    return progressed;
  }

  // One step of `consumer`. Returns whether anything moved.
  bool step(Consumer& consumer, bool stopping, DrainResult& totals) {
    const auto began = std::chrono::steady_clock::now();
    // Every statement of the round, the lock-sharing gap's data_version read included, raises
    // sluice::DatabaseError on a storage fault, never SQLite's own exception.
    const StepResult stepped = guarded("deliver", [&] {
      StepResult result = deliverer->step(consumer.spec, consumer.in_hand, stopping);
      lock_sharing->after_step(began, result.held_write_lock);
      return result;
    });
    totals.delivered += stepped.delivered;
    totals.retried += stepped.retried + stepped.snoozed;
    totals.dead_lettered += stepped.dead_lettered;
    return stepped.progressed;
  }

  // After a wake: the consumers to step first; none (not a wake's round) for a single consumer.
  std::optional<std::vector<std::int64_t>> woken_first() {
    if (consumers.size() < 2) return std::nullopt;
    return guarded("deliver", [&] {
      if (!wake_order) {
        std::vector<std::int64_t> ids;
        for (const Consumer& consumer : consumers) ids.push_back(consumer.spec.id);
        wake_order.emplace(*db, ids);
      }
      return wake_order->first();
    });
  }

  // A consumer removed from the file while this worker ran (Deliverer::step logged it).
  void forget_gone_consumers() {
    const auto gone = std::remove_if(consumers.begin(), consumers.end(),
                                     [](const Consumer& c) { return c.spec.gone; });
    if (gone == consumers.end()) return;
    consumers.erase(gone, consumers.end());
    idle_check.reset();
    wake_order.reset();
    record_consumer_names();
  }

  void record_consumer_names() {
    std::string names = "[";
    for (const Consumer& consumer : consumers) {
      if (names.size() > 1) names += ',';
      append_json_string(names, consumer.spec.name);
    }
    deliverer->claims().set_consumers(names + "]");
  }

  // Only a worker without its kernel lock (claim_book.hpp) renews leases.
  void hold_leases() {
    if (lease_keeper) lease_keeper->hold(holds_claims() && deliverer->claims().needs_lease());
  }

  bool holds_claims() const {
    return std::any_of(consumers.begin(), consumers.end(),
                       [](const Consumer& c) { return c.in_hand.has_value(); });
  }

  bool watching() const { return file_watch && file_watch->available(); }

  bool committed_since(std::uint64_t seen_generation, long long version_before) {
    return (signal && signal->generation() != seen_generation) ||
           data_version->read() != version_before;
  }

  // Sleeps until the kernel reports the file changed or a commit in this process signals (then
  // checks that a commit is visible), or for `left`. Returns whether something committed.
  bool woken_by_file(std::uint64_t seen_generation, long long version_before,
                     std::chrono::steady_clock::duration left) {
    const bool event = file_watch->wait(left);
    // A commit in this process interrupts the wait (CommitSignal::add_watch), once visible.
    if (committed_since(seen_generation, version_before)) return true;
    return event && published_soon(seen_generation, version_before);
  }

  // After a file-watch event, or a spell with the watch muted (a write then raised none): looks
  // for the commit it may announce until kPublishPatience passes with no newer event.
  bool published_soon(std::uint64_t seen_generation, long long version_before) {
    std::chrono::microseconds pause = kFirstPublishPause;
    std::chrono::microseconds waited{0};
    while (waited < kPublishPatience && !stop_requested.load()) {
      if (committed_since(seen_generation, version_before)) return true;
      if (file_watch->wait(pause)) {
        // A newer event: its commit may be the one, published soon.
        pause = kFirstPublishPause;
        waited = {};
      } else {
        waited += pause;
        pause *= 2;
      }
    }
    return committed_since(seen_generation, version_before);
  }

  // Without a file watch: waits on the commit signal, reading data_version every poll interval.
  bool woken_by_poll(std::uint64_t seen_generation, long long version_before,
                     std::chrono::steady_clock::duration left) {
    const auto slice = std::min<std::chrono::steady_clock::duration>(left, options.poll_interval);
    if (signal) {
      signal->wait(seen_generation, slice);
      if (signal->generation() != seen_generation) return true;
    } else {
      std::unique_lock lock(wake_mutex);
      wake.wait_for(lock, slice, [&] { return stop_requested.load(); });
    }
    return data_version->read() != version_before;
  }

  // Sleeps until a commit in this process or another one, or for `timeout`. Returns whether
  // something committed since `seen_generation` and `version_before` were read.
  bool slept_until_commit(std::uint64_t seen_generation, long long version_before,
                          Duration timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const bool watched = watching();
    while (!stop_requested.load() && std::chrono::steady_clock::now() < deadline) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (watching()) {
        if (woken_by_file(seen_generation, version_before, left)) return true;
      } else if (watched) {
        return false;  // the watch is gone: the caller's next stretch is the shorter, unwatched one
      } else if (woken_by_poll(seen_generation, version_before, left)) {
        return true;
      }
    }
    return false;
  }

  // After a round that began at `looked_at` found nothing to do: returns once something
  // committed, stop() was called, or the clock says a retry or delay is due (or was set back).
  void idle(std::uint64_t seen_generation, long long version_before, TimePoint looked_at) {
    if (!idle_check) {
      std::vector<std::int64_t> ids;
      for (const Consumer& consumer : consumers) ids.push_back(consumer.spec.id);
      guarded("wait for work", [&] { idle_check.emplace(*db, deliverer->owner(), ids); });
    }
    // The watch was muted while the worker delivered: the other processes' commits since the
    // round began raised no event, and one written just before listen() may be published later.
    if (file_watch && file_watch->listen() && published_soon(seen_generation, version_before)) {
      return;
    }
    // Holds until the next commit, which ends the sleep.
    const IdleCheck::Finding found =
        guarded("wait for work", [&] { return idle_check->after(looked_at); });
    bool slept = false;
    while (!stop_requested.load()) {
      // The clock, not the sleep, tells when a retry is due: it may have stepped meanwhile.
      const TimePoint now = clock->now();
      if (now < looked_at || (found.next_due && *found.next_due <= now)) return;
      // Once per sleep, of up to kIdleChecksEvery poll intervals here, as another worker's claim
      // may have been abandoned meanwhile.
      if (slept && found.others_claim) return;
      // Capped so that the deadline on steady_clock (nanoseconds) cannot overflow for the
      // longest poll_interval allowed.
      const Duration unwatched =
          std::min(options.poll_interval * kIdleChecksEvery, Options::kLongestDuration);
      Duration timeout = watching() ? std::min(options.poll_interval * FileWatch::kSafetyNetPolls,
                                               Options::kLongestDuration)
                                    : unwatched;
      if (found.others_claim) timeout = std::min(timeout, unwatched);
      if (found.next_due) timeout = std::min(timeout, sub_saturating(*found.next_due, now));
      if (slept_until_commit(seen_generation, version_before, timeout)) return;
      slept = true;
    }
  }

  // Until the worker next sleeps, no write to the file (its own, or another process's) makes the
  // kernel queue an event: a busy worker needs no wake (FileWatch::mute).
  void mute_file_watch() {
    if (file_watch) file_watch->mute();
  }

  void log_error(const char* message, const std::exception& e) {
    log_to(options, LogLevel::kError, message, {{"error", e.what()}});
  }

  void run() {
    // Consumers may have subscribed since an earlier start().
    idle_check.reset();
    wake_order.reset();
    Duration storage_backoff = kFirstStorageBackoff;
    bool woken = false;
    // Seen alive from the start, not from its first claim: an idle worker is a living one.
    deliverer->claims().register_worker();
    mute_file_watch();
    while (!stop_requested.load()) {
      DrainResult ignored;
      const std::uint64_t seen_generation = signal ? signal->generation() : 0;
      try {
        const long long version_before = data_version->read();
        const TimePoint looked_at = clock->now();
        const bool progressed = round(false, ignored, woken ? woken_first() : std::nullopt);
        woken = false;
        if (progressed) {
          storage_backoff = kFirstStorageBackoff;
          // The first round after a wake runs with the watch listening (the wake's latency
          // goes first); the rest of a busy spell without.
          mute_file_watch();
          continue;
        }
        idle(seen_generation, version_before, looked_at);
        woken = true;
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
    hold_leases();
    if (!holds_claims()) deliverer->claims().unregister_worker();
  }

  Options options;
  std::shared_ptr<Clock> clock;
  std::optional<SQLite::Database> owned;
  SQLite::Database* db = nullptr;
  std::vector<Consumer> consumers;
  std::unique_ptr<Deliverer> deliverer;
  std::unique_ptr<LeaseKeeper> lease_keeper;  // null for a file only this process can see
  std::unique_ptr<FileWatch> file_watch;      // null for an in-memory database
  std::optional<DataVersion> data_version;
  std::optional<LockSharing> lock_sharing;
  // Made by the worker's thread once it first idles (is first woken) after start().
  std::optional<IdleCheck> idle_check;
  std::optional<WakeOrder> wake_order;
  CommitSignal* signal = nullptr;

  std::mutex lifecycle_mutex;
  std::thread thread;
  std::atomic<bool> running{false};
  // run_until_idle() is delivering on a caller's thread (set under lifecycle_mutex).
  std::atomic<bool> draining{false};
  std::atomic<bool> stop_requested{false};
  std::mutex wake_mutex;
  std::condition_variable wake;
};

Worker::Worker(const std::string& path, Options options) {
  // Every connection opened by path to ":memory:" (or "") is a database of its own: such a worker
  // would deliver from an empty database, never from the app's.
  if (path == ":memory:" || path.empty()) {
    throw InvalidArgument(
        "sluice: worker: Worker(\"" + path +
        "\") would open a second, empty in-memory database that nothing else writes to; open "
        "the database once (SQLite::Database db = sluice::open_database(\":memory:\")) and pass "
        "the connection: Worker(SQLite::Database&)");
  }
  impl_ = std::make_unique<Impl>(nullptr, path, std::move(options));
}

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
  std::lock_guard lock(impl_->lifecycle_mutex);
  impl_->consumer_for(consumer, topic, options).spec.handlers[topic] = std::move(handler);
}

void Worker::subscribe_batch(const std::string& consumer, const std::string& topic,
                             BatchHandler handler, ConsumerOptions options) {
  if (!handler) throw InvalidArgument("sluice: subscribe: the handler is empty");
  if (options.mode != DeliveryMode::kOutsideTransaction) {
    throw InvalidArgument("sluice: subscribe_batch: consumer '" + consumer +
                          "' must run outside the transaction (DeliveryMode::kOutsideTransaction)");
  }
  std::lock_guard lock(impl_->lifecycle_mutex);
  impl_->consumer_for(consumer, topic, options).spec.batch_handlers[topic] =
      std::make_shared<const BatchHandler>(std::move(handler));
}

void Worker::subscribe_batch_topics(const std::string& consumer,
                                    const std::vector<std::string>& topics, BatchHandler handler,
                                    ConsumerOptions options) {
  if (!handler) throw InvalidArgument("sluice: subscribe: the handler is empty");
  if (options.mode != DeliveryMode::kOutsideTransaction) {
    throw InvalidArgument("sluice: subscribe_batch: consumer '" + consumer +
                          "' must run outside the transaction (DeliveryMode::kOutsideTransaction)");
  }
  if (topics.empty()) throw InvalidArgument("sluice: subscribe_batch: the list of topics is empty");
  for (std::size_t i = 0; i < topics.size(); ++i) {
    if (std::find(topics.begin(), topics.begin() + i, topics[i]) != topics.begin() + i)
      throw InvalidArgument("sluice: subscribe_batch: topic '" + topics[i] + "' is listed twice");
  }
  std::lock_guard lock(impl_->lifecycle_mutex);
  // Every topic is checked before any subscription is recorded, so a refused call writes nothing.
  const auto found = std::find_if(impl_->consumers.begin(), impl_->consumers.end(),
                                  [&](const Impl::Consumer& c) { return c.spec.name == consumer; });
  for (const std::string& topic : topics) {
    if (topic.empty()) throw InvalidArgument("sluice: subscribe: the topic is empty");
    if (found != impl_->consumers.end() && found->spec.has_handler(topic)) {
      throw InvalidArgument("sluice: subscribe: consumer '" + consumer +
                            "' already has a handler for topic '" + topic + "'");
    }
  }
  const auto shared = std::make_shared<const BatchHandler>(std::move(handler));
  for (const std::string& topic : topics)
    impl_->consumer_for(consumer, topic, options).spec.batch_handlers[topic] = shared;
}

void Worker::start() {
  std::lock_guard lock(impl_->lifecycle_mutex);
  if (impl_->running.load()) return;
  if (impl_->draining.load()) {
    throw InvalidArgument(
        "sluice: start: run_until_idle() is delivering on another thread; the worker's "
        "connection takes one thread at a time");
  }
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
  if (impl_->file_watch) impl_->file_watch->interrupt();
  impl_->wake.notify_all();
  impl_->thread.join();
  impl_->running = false;
}

DrainResult Worker::run_until_idle() {
  {
    std::lock_guard lock(impl_->lifecycle_mutex);
    if (impl_->running.load()) {
      throw InvalidArgument("sluice: run_until_idle: the worker is running on its own thread");
    }
    if (impl_->draining.exchange(true)) {
      throw InvalidArgument(
          "sluice: run_until_idle: already delivering on another thread; the worker's "
          "connection takes one thread at a time");
    }
  }
  struct Drained {
    std::atomic<bool>& draining;
    ~Drained() { draining = false; }
  } drained{impl_->draining};
  DrainResult totals;
  impl_->mute_file_watch();
  while (impl_->round(false, totals)) {
  }
  return totals;
}

SQLite::Database& Worker::db() { return *impl_->db; }

}  // namespace sluice
