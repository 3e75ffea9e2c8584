#include "sequence_run.hpp"

#include <SQLiteCpp/Transaction.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "../torture/temp_dir.hpp"
#include "c_worker_instance.hpp"
#include "invariants.hpp"
#include "reference_model.hpp"
#include "sluice/backfill.hpp"
#include "sluice/consumer_removal.hpp"
#include "sluice/database.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "sluice/outbox.hpp"
#include "sluice/pause.hpp"
#include "sluice/retention.hpp"
#include "sql_instance.hpp"
#include "worker_instance.hpp"

namespace sluice::model {
namespace {

// model_stall_recoverer (stall_recoverer.cpp), as meson passes it; empty when not set.
std::string stall_recoverer() {
  const char* path = std::getenv("SLUICE_MODEL_RECOVERER");
  return path == nullptr ? std::string() : std::string(path);
}

// Whether a process may be started in a PID namespace of its own (root only, as a rule).
bool pid_namespaces() {
  static const bool permitted =
      std::system("/usr/bin/unshare --pid --fork --mount-proc true >/dev/null 2>&1") == 0;
  return permitted;
}

const char* status_name(EnqueueResult::Status status) {
  switch (status) {
    case EnqueueResult::Status::kStored:
      return "stored";
    case EnqueueResult::Status::kDuplicateId:
      return "duplicate id";
    case EnqueueResult::Status::kDuplicateDedupKey:
      return "duplicate dedup key";
  }
  return "?";
}

class Sequence final : public CallSink {
 public:
  Sequence(const SequenceConfig& config, const std::vector<std::string>& ignored)
      : config_(config),
        ignored_(ignored),
        manual_(std::make_shared<ManualClock>()),
        clock_(config.seams ? system_clock() : manual_),
        path_(dir_.file("model.db")),
        model_(config_) {
    options_.clock = clock_;
    if (config_.lease_fallback) std::filesystem::create_directory(path_ + "-sluice-lock");
    options_.synchronous = Synchronous::kNormal;
    options_.batch_size = config.batch_size;
    options_.batch_time_budget = config.batch_time_budget;
    options_.retry = config.retry;
    // Stall sequences: see SequenceConfig::lease_fallback.
    if (config_.lease_fallback && !config_.seams) options_.claim_lease = std::chrono::hours(1);
    db_.emplace(open_database(path_, options_));
    create_applied_table(*db_);
    outbox_ = std::make_unique<Outbox>(*db_, options_);
    for (std::size_t i = 0; i < config.instances.size(); ++i) instances_.push_back(start(i));
    last_drain_.resize(instances_.size());
    latest_possible_.resize(instances_.size());
  }

  SequenceOutcome run(const std::vector<Operation>& ops) {
    SequenceOutcome outcome;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      std::vector<Violation> found;
      std::string line = "#" + std::to_string(i) + " " + describe(ops[i]);
      try {
        line += step(ops[i], found);
      } catch (const std::exception& e) {
        found.push_back({"engine threw", std::string(e.what())});
      }
      {
        std::lock_guard lock(mutex_);
        found.insert(found.begin(), call_violations_.begin(), call_violations_.end());
        call_violations_.clear();
      }
      if (found.empty()) {
        try {
          check_dead_letters(*db_, model_, found);
          check_ledger(*db_, model_, config_, found);
          check_stats(*db_, model_, config_, options_, found);
        } catch (const std::exception& e) {
          found.push_back({"engine threw", std::string(e.what())});
        }
      }
      outcome.log.push_back(line);
      std::erase_if(found, [&](const Violation& v) {
        return std::any_of(ignored_.begin(), ignored_.end(), [&](const std::string& prefix) {
          return v.invariant.rfind(prefix, 0) == 0;
        });
      });
      if (!found.empty()) {
        outcome.violations = std::move(found);
        outcome.failed_step = i;
        break;
      }
    }
    outcome.handler_calls = calls_;
    outcome.breaker_openings = model_.breaker_openings();
    return outcome;
  }

  Scripted on_call(const std::string& consumer, int generation, const Event& event, int attempt,
                   const void* connection) override {
    return calls(consumer, generation, {event}, attempt, false, connection).front();
  }

  void on_transaction_end(const void* connection, bool committed) override {
    std::lock_guard lock(mutex_);
    model_.delivery_transaction_ended(connection, committed);
  }

  std::vector<Scripted> on_batch(const std::string& consumer, int generation,
                                 const std::vector<Event>& events) override {
    return calls(consumer, generation, events, 0, true);
  }

 private:
  std::unique_ptr<Instance> start(std::size_t instance) {
    const InstanceConfig& config = config_.instances[instance];
    switch (config.kind) {
      case InstanceKind::kCpp:
        break;
      case InstanceKind::kC:
        return std::make_unique<CWorkerInstance>(path_, config_, config, *this);
      case InstanceKind::kSql:
        return std::make_unique<SqlInstance>(path_, config_, config, *this, sql_extension());
    }
    return std::make_unique<WorkerInstance>(path_, config_, config, options_, *this);
  }

  std::vector<Scripted> calls(const std::string& consumer, int generation,
                              const std::vector<Event>& events, int attempt, bool batch,
                              const void* connection = nullptr) {
    // Released around the engine's work below: while a batch handler waits for the write lock,
    // the worker's thread may commit, and its commit hook (on_transaction_end) takes this mutex
    // holding that lock.
    std::unique_lock lock(mutex_);
    std::vector<long long> ns;
    for (const Event& event : events) ns.push_back(event_number(event));
    if (generation != config_.consumer(consumer).generation) {
      // Nothing is applied to the model: the call was never the new consumer's to make.
      call_violations_.push_back(
          {"delivery by a removed consumer's worker",
           "a handler subscribed for " + consumer + " before it was removed was called with n=" +
               std::to_string(ns.front()) + " (" + std::to_string(ns.size()) + " event(s))"});
      return std::vector<Scripted>(ns.size());
    }
    // The drain's first call on its own thread (not a batch run ahead while the last commits).
    if (throttle_next_ && std::this_thread::get_id() == sequence_thread_) {
      throttle_next_ = false;
      throttled_consumer_ = consumer;
      calls_ += static_cast<long long>(ns.size());
      // Half the throttles give a reason (the pause's note), half none.
      const std::string reason = throttle_delay_.count() % 2 == 0 ? "" : "throttled by the model";
      in_flight_note_ = " (" + consumer + " throttled at n=" + std::to_string(ns.front()) + ", " +
                        std::to_string(ns.size()) + " event(s))";
      return model_.on_throttled_call(consumer, ns, attempt, batch, clock_->now(), throttle_delay_,
                                      reason, call_violations_);
    }
    const bool replay_now =
        in_flight_replay_ && calls_ == replay_at_call_ && config_.consumer(consumer).outside;
    calls_ += static_cast<long long>(ns.size());
    const bool backfill_now = in_flight_backfill_ == consumer &&
                              model_.find(ns.front()) != nullptr &&
                              model_.find(ns.front())->pairs.count(consumer) > 0 &&
                              model_.peek_outcome(consumer, ns.front()).action == Action::kOk;
    if (replay_now) {
      in_flight_replay_ = false;
      lock.unlock();
      long long replayed = 0;
      {
        SQLite::Database operator_db = open_database(path_, options_);
        replayed = replay_dead_letters(operator_db, {}, options_);
      }
      lock.lock();
      const long long expected =
          model_.replay([](const ModelEvent&, const std::string&, const Pair&) { return true; });
      if (replayed != expected) {
        call_violations_.push_back({"replay count", "replay in flight replayed " +
                                                        std::to_string(replayed) + ", the model " +
                                                        std::to_string(expected)});
      }
      in_flight_note_ = " (replayed " + std::to_string(replayed) + " in flight)";
    }
    // Only in a call on the drain's own thread: a batch handed ahead to the worker's handler
    // thread runs while the batch before it commits, which would race the recovery.
    const bool stall_now = in_flight_stall_ && config_.consumer(consumer).outside &&
                           std::this_thread::get_id() == sequence_thread_;
    std::optional<ReferenceModel::CallSnapshot> before_stall;
    if (stall_now) before_stall = model_.snapshot(consumer, ns);
    std::vector<Scripted> outcomes =
        model_.on_calls(consumer, ns, attempt, batch, clock_->now(), call_violations_, connection);
    if (stall_now) {
      in_flight_stall_ = false;
      lock.unlock();
      const std::string note = stall_past_lease(consumer, *before_stall);
      lock.lock();
      in_flight_note_ = note;
    }
    if (in_flight_foreign_lock_ && config_.consumer(consumer).outside) {
      in_flight_foreign_lock_ = false;
      lock.unlock();
      const std::string note = foreign_lock_and_second_drain();
      lock.lock();
      in_flight_note_ = note;
    }
    if (backfill_now && !outcomes.front().whole_batch) {
      in_flight_backfill_.reset();
      lock.unlock();
      long long queued = 0;
      {
        // On a connection of its own: the worker's is in use, and never shared.
        SQLite::Database operator_db = open_database(path_, options_);
        queued = backfill(operator_db, consumer, {events.front().id}, options_);
      }
      lock.lock();
      model_.backfill(consumer, events.front().seq, std::set<long long>(ns.begin(), ns.end()));
      in_flight_note_ = " (backfill from n=" + std::to_string(ns.front()) + " in flight queued " +
                        std::to_string(queued) + ")";
    }
    return outcomes;
  }

  // Runs `op` on the engine and the model; returns what it did for the log.
  std::string step(const Operation& op, std::vector<Violation>& found) {
    switch (op.kind) {
      case OpKind::kEnqueue:
      case OpKind::kEnqueueBatch:
      case OpKind::kEnqueueRolledBack:
        return enqueue(op, found);
      case OpKind::kEnqueueBadBatch:
        return enqueue_bad_batch(op, found);
      case OpKind::kDrain:
        return drain(static_cast<std::size_t>(op.instance), found);
      case OpKind::kClockForward:
      case OpKind::kClockBack: {
        if (config_.seams) return " (skipped: real time)";
        // A step is noticed by a worker only at its next step (see drain()).
        manual_->advance(op.kind == OpKind::kClockForward ? op.step : -op.step);
        return "";
      }
      case OpKind::kReplay:
      case OpKind::kDiscard:
        return dead_letter_operation(op, found);
      case OpKind::kBackfill:
        return backfill_between_drains(op, found);
      case OpKind::kBackfillInFlight: {
        const ConsumerConfig& consumer = config_.consumers[op.consumer % config_.consumers.size()];
        if (!consumer.outside) return " (skipped: " + consumer.name + " is in-transaction)";
        in_flight_backfill_ = consumer.name;
        in_flight_note_ = " (no call to backfill in)";
        std::string line = drain(0, found);
        in_flight_backfill_.reset();
        return line + in_flight_note_;
      }
      case OpKind::kReplayInFlight: {
        // In the drain's first handler call only: the file then holds every outcome the model
        // knows of (later calls may run while an earlier batch's outcomes still commit).
        in_flight_replay_ = true;
        replay_at_call_ = calls_;
        in_flight_note_ = " (the first call was not an outside consumer's)";
        std::string line = drain(0, found);
        in_flight_replay_ = false;
        return line + in_flight_note_;
      }
      case OpKind::kPrune:
        return prune_events(op, found);
      case OpKind::kRestartWorker: {
        const std::size_t i = static_cast<std::size_t>(op.instance);
        instances_[i].reset();
        instances_[i] = start(i);
        last_drain_[i].reset();
        latest_possible_[i].reset();
        return "";
      }
      case OpKind::kSqlCloseMidClaim:
      case OpKind::kSqlRelease:
        return leave_mid_claim(op, found);
      case OpKind::kRemoveReadd:
        return remove_and_add_again(op, found);
      case OpKind::kStallInFlight: {
        if (!config_.lease_fallback || config_.seams) return " (skipped: not a stall sequence)";
        in_flight_stall_ = true;
        in_flight_note_ = " (no outside consumer's call to stall in)";
        std::string line = drain(0, found);
        if (!in_flight_stall_) stepped_by_vanished_writer();
        in_flight_stall_ = false;
        return line + in_flight_note_;
      }
      case OpKind::kCStartInFlight:
        return start_in_flight(found);
      case OpKind::kPause: {
        const std::string& name = config_.consumers[op.consumer % config_.consumers.size()].name;
        PauseOptions pause;
        if (op.pick % 2 != 0) pause.until = clock_->now() + op.step;
        pause_consumer(*db_, name, pause, options_);
        model_.paused(name, pause.until.value_or(TimePoint::max()));
        return "";
      }
      case OpKind::kResume: {
        const std::string& name = config_.consumers[op.consumer % config_.consumers.size()].name;
        resume_consumer(*db_, name, options_);
        model_.resumed(name);
        return "";
      }
      case OpKind::kThrottleInFlight: {
        throttle_next_ = true;
        throttle_delay_ = op.step;
        throttled_consumer_.reset();
        in_flight_note_ = " (no call to throttle)";
        std::string line = drain(static_cast<std::size_t>(op.instance), found);
        throttle_next_ = false;
        if (throttled_consumer_) {
          std::lock_guard lock(mutex_);
          model_.throttle_recorded_by(*throttled_consumer_, clock_->now(), throttle_delay_);
        }
        return line + in_flight_note_;
      }
      case OpKind::kForeignLockInFlight: {
        in_flight_foreign_lock_ = true;
        in_flight_note_ = " (no outside consumer's call to hold the lock in)";
        std::string line = drain(0, found);
        if (!in_flight_foreign_lock_ && !config_.seams) stepped_by_vanished_writer();
        in_flight_foreign_lock_ = false;
        return line + in_flight_note_;
      }
      case OpKind::kStartStop: {
        const long long calls_before = calls_;
        Worker worker(path_, options_);
        subscribe_handlers(worker, config_, config_.instances[op.instance], *this);
        // A worker new to the file re-anchors at its first step, but stop() may come before it.
        model_.clock_maybe_seen_behind(clock_->now());
        worker.start();
        worker.stop();
        std::lock_guard lock(mutex_);
        return " (" + std::to_string(calls_ - calls_before) + " handler calls)";
      }
    }
    return "";
  }

  NewEvent new_event(const EventSpec& spec, long long n) {
    NewEvent event;
    event.topic = config_.topics[spec.topic];
    event.payload = "{\"n\":" + std::to_string(n) + "}";
    if (spec.key >= 0) event.key = "k" + std::to_string(spec.key);
    if (spec.id >= 0) event.id = "id-" + std::to_string(spec.id);
    if (spec.dedup >= 0) event.dedup_key = "d-" + std::to_string(spec.dedup);
    if (spec.delay.count() > 0) event.not_before = clock_->now() + spec.delay;
    return event;
  }

  std::string enqueue(const Operation& op, std::vector<Violation>& found) {
    std::vector<NewEvent> events;
    std::vector<long long> ns;
    for (const EventSpec& spec : op.events) {
      ns.push_back(next_n_++);
      events.push_back(new_event(spec, ns.back()));
    }
    std::optional<SQLite::Transaction> tx;
    tx.emplace(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    model_.begin_transaction();
    std::vector<EnqueueResult> results;
    if (op.kind == OpKind::kEnqueueBatch) {
      results = outbox_->enqueue_batch(events);
    } else {
      for (const NewEvent& event : events) results.push_back(outbox_->enqueue(event));
    }
    int stored = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const EnqueueResult expected = model_.expect_enqueue(events[i], ns[i], clock_->now());
      const EnqueueResult& got = results[i];
      const bool stored_in_order =
          expected.status == EnqueueResult::Status::kStored && got.seq > model_.last_seq();
      const bool same = got.status == expected.status &&
                        (got.seq == expected.seq || stored_in_order) &&
                        (expected.id.empty() || got.id == expected.id);
      if (!same) {
        found.push_back({"enqueue result",
                         "n=" + std::to_string(ns[i]) + " got " + status_name(got.status) + " " +
                             got.id + " seq " + std::to_string(got.seq) + ", the model expects " +
                             status_name(expected.status) + " " + expected.id + " seq " +
                             (expected.seq > 0 ? std::to_string(expected.seq)
                                               : "> " + std::to_string(model_.last_seq()))});
        return "";
      }
      if (got.status == EnqueueResult::Status::kStored) {
        ++stored;
        model_.stored(ns[i], got.id, got.seq);
      }
    }
    if (op.kind == OpKind::kEnqueueRolledBack) {
      tx.reset();  // rolls back
      model_.rollback_transaction();
      return " (rolled back)";
    }
    tx->commit();
    return " (n=" + std::to_string(ns.front()) + ".." + std::to_string(ns.back()) + ", " +
           std::to_string(stored) + " stored)";
  }

  std::string enqueue_bad_batch(const Operation& op, std::vector<Violation>& found) {
    std::vector<NewEvent> events;
    for (const EventSpec& spec : op.events) events.push_back(new_event(spec, next_n_++));
    events[op.pick % events.size()].payload = "{\"n\":";
    const std::int64_t newest = newest_event_seq(*db_);
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    try {
      outbox_->enqueue_batch(events);
      found.push_back({"bad input", "enqueue_batch accepted a malformed payload"});
    } catch (const InvalidArgument&) {
    }
    tx.commit();
    if (newest_event_seq(*db_) != newest)
      found.push_back({"bad input", "enqueue_batch with a malformed payload wrote events"});
    return "";
  }

  std::string drain(std::size_t instance, std::vector<Violation>& found) {
    // A worker re-anchors when its clock reads behind its last step, or at its first step.
    const TimePoint now = clock_->now();
    if (vanished_writer_) {
      // A worker that is gone (the second worker of a foreign lock, the process that recovered
      // a stalled claim) wrote retries at a clock reading stepped past the lease, which a worker
      // here read only if it stepped that consumer since. A worker re-anchors a consumer when
      // the clock reads behind its last step of that consumer: the model knows only the latest
      // reading each instance may have made, so a re-anchor may or may not happen.
      if (!latest_possible_[instance] || now < *latest_possible_[instance])
        model_.clock_maybe_seen_behind(now);
      if (!latest_possible_[instance] || now > *latest_possible_[instance])
        latest_possible_[instance] = now;
    } else if (!last_drain_[instance] || now < *last_drain_[instance]) {
      std::set<std::string> delivers_for;
      for (const auto& [consumer, topics] : config_.instances[instance].handles)
        delivers_for.insert(consumer);
      model_.clock_seen_behind(now, &delivers_for);
    }
    last_drain_[instance] = now;
    drain_began_ = now;
    const DrainResult result = instances_[instance]->drain();
    // What was due when the drain began must be done; on real time more may be due since.
    const TimePoint began = now;
    std::string line = " (delivered " + std::to_string(result.delivered) + ", retried " +
                       std::to_string(result.retried) + ", dead " +
                       std::to_string(result.dead_lettered) + ")";
    {
      std::lock_guard lock(mutex_);
      if (!call_violations_.empty()) return line;
    }
    const InstanceConfig& handles = config_.instances[instance];
    check_unhandled_attempts(*db_, model_, config_, found);
    check_dead_letters(*db_, model_, found);
    check_drained(*db_, model_, handles, began, found);
    if (!found.empty()) return line;
    // Nothing may run at this time: another run_until_idle() must not write at all. On real time,
    // nothing may run in the next seconds either (the check would race the clock).
    const std::optional<long long> before = instances_[instance]->write_transactions();
    if (!before) return line;
    const Duration margin = config_.seams ? Duration(2000) : Duration(0);
    for (const DuePair& due : model_.due(handles, clock_->now() + margin)) {
      if (due.may_run) return line;
    }
    instances_[instance]->drain();
    const long long writes = *instances_[instance]->write_transactions() - *before;
    if (writes > 0) {
      found.push_back({"write transaction while idle",
                       "run_until_idle() on instance " + std::to_string(instance) + " began " +
                           std::to_string(writes) +
                           " write transaction(s) though nothing was deliverable"});
    }
    return line;
  }

  // Called from a handler of instance 0, which holds its claim: a foreign connection takes the
  // write lock on a thread of its own and keeps it 300 ms; meanwhile the clock moves past
  // claim_lease (not on real time) and a second worker drains, its writes waiting for the lock.
  // The first worker lives: its claim must not be taken over (which the model would see as a
  // second delivery, or the first worker's outcomes lost).
  std::string foreign_lock_and_second_drain() {
    std::promise<void> locked;
    std::future<void> taken = locked.get_future();
    std::thread holder([this, &locked] {
      SQLite::Database foreign = open_database(path_, options_);
      foreign.exec("BEGIN IMMEDIATE");
      locked.set_value();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      foreign.exec("COMMIT");
    });
    taken.wait();
    if (!config_.seams) {
      const Duration step = options_.claim_lease + std::chrono::seconds(1);
      {
        std::lock_guard lock(mutex_);
        model_.clock_stepped_mid_drain(drain_began_, step, true);
      }
      manual_->advance(step);
    }
    const auto began = std::chrono::steady_clock::now();
    DrainResult result;
    {
      // New to the file, it re-anchors waits scheduled after now: none, the clock only moved on.
      WorkerInstance second(path_, config_, config_.instances[0], options_, *this);
      result = second.drain();
    }
    holder.join();
    const long long waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now() - began)
                                 .count();
    if (config_.seams) {
      // On real time the first worker's outcomes of this drain are recorded that much later.
      std::lock_guard lock(mutex_);
      model_.clock_stepped_mid_drain(drain_began_, Duration(waited + 100));
    }
    return " (a foreign connection held the write lock; a second worker waited " +
           std::to_string(waited) + " ms, delivered " + std::to_string(result.delivered) + ")";
  }

  // Called from an outside handler of instance 0, whose call `before` was taken before: the
  // worker stalls here past its claim's lease; a worker of another process that cannot look it
  // up recovers the claim; then the call returns, and what it returns must count for nothing.
  std::string stall_past_lease(const std::string& consumer,
                               const ReferenceModel::CallSnapshot& before) {
    if (stall_recoverer().empty()) return " (skipped: SLUICE_MODEL_RECOVERER is not set)";
    if (!pid_namespaces()) return " (skipped: unshare(1) is not permitted here, needs root)";
    // The claim the call belongs to, and what recovering it makes crash, as the engine counts
    // them: the claim's events this consumer has no inbox or delivery row for, and its retries.
    std::int64_t claim = 0;
    std::vector<long long> victims;
    {
      SQLite::Database reader(path_, SQLite::OPEN_READONLY);
      SQLite::Statement find(reader,
                             "SELECT c.id, c.from_seq, c.to_seq FROM sluice_claims c JOIN "
                             "sluice_consumers k ON k.id = c.consumer_id WHERE k.name = ?");
      find.bind(1, consumer);
      if (!find.executeStep()) return " (stalled, but no claim of " + consumer + " was found)";
      claim = find.getColumn(0).getInt64();
      SQLite::Statement crashing(
          reader,
          "SELECT e.seq FROM sluice_events e JOIN sluice_subscriptions s ON s.topic = e.topic "
          "JOIN sluice_consumers k ON k.id = s.consumer_id WHERE k.name = ?1 AND e.seq > ?2 AND "
          "e.seq <= ?3 AND e.seq > s.start_seq AND NOT EXISTS (SELECT 1 FROM sluice_inbox i WHERE "
          "i.consumer_id = k.id AND i.event_id = e.id) AND NOT EXISTS (SELECT 1 FROM "
          "sluice_deliveries d WHERE d.consumer_id = k.id AND d.event_seq = e.seq) "
          "UNION SELECT event_seq FROM sluice_deliveries WHERE claim_id = ?4 AND state = "
          "'claimed' ORDER BY 1");
      crashing.bind(1, consumer);
      crashing.bind(2, find.getColumn(1).getInt64());
      crashing.bind(3, find.getColumn(2).getInt64());
      crashing.bind(4, claim);
      std::lock_guard lock(mutex_);
      while (crashing.executeStep()) {
        const std::int64_t seq = crashing.getColumn(0).getInt64();
        for (const auto& [n, event] : model_.events()) {
          if (event.seq == seq) victims.push_back(n);
        }
      }
    }
    const Duration step = options_.claim_lease + std::chrono::seconds(1);
    {
      std::lock_guard lock(mutex_);
      model_.clock_stepped_mid_drain(drain_began_, step, true);
    }
    manual_->advance(step);
    const std::string command = "/usr/bin/unshare --pid --fork --mount-proc '" + stall_recoverer() +
                                "' '" + path_ + "' '" + consumer + "' " +
                                std::to_string(clock_->now().time_since_epoch().count()) + " " +
                                std::to_string(config_.seed) + " 2>&1";
    std::string output;
    int status = -1;
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buffer[512];
      while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
      status = pclose(pipe);
    }
    bool recovered = false;
    {
      SQLite::Database reader(path_, SQLite::OPEN_READONLY);
      SQLite::Statement still(reader, "SELECT 1 FROM sluice_claims WHERE id = ?");
      still.bind(1, claim);
      recovered = !still.executeStep();
    }
    std::lock_guard lock(mutex_);
    if (status != 0) {
      call_violations_.push_back({"stall recoverer", "the other process's worker failed (" +
                                                         std::to_string(status) + "): " + output});
      return " (the recoverer failed)";
    }
    if (!recovered) {
      call_violations_.push_back(
          {"stalled claim kept",
           "claim " + std::to_string(claim) + " of " + consumer +
               " outlived its lease by 1 s and a worker that cannot look its owner up left it"});
      return " (not recovered)";
    }
    // The call never counts: the events it had are the claim's, and crash like the rest.
    model_.restore(before);
    model_.crashed(consumer, victims, clock_->now());
    return " (stalled past the lease: another process recovered claim " + std::to_string(claim) +
           " of " + consumer + " with " + std::to_string(victims.size()) +
           " event(s) as crashed; the stalled call then returned)";
  }

  // After a drain of instance 0 during which the clock stepped and a worker now gone wrote.
  void stepped_by_vanished_writer() {
    vanished_writer_ = true;
    for (std::size_t i = 0; i < latest_possible_.size(); ++i) {
      if (!latest_possible_[i] || (last_drain_[i] && *last_drain_[i] > *latest_possible_[i]))
        latest_possible_[i] = last_drain_[i];
    }
    latest_possible_[0] = clock_->now();
  }

  std::string start_in_flight(std::vector<Violation>& found) {
    for (std::size_t i = 0; i < instances_.size(); ++i) {
      if (config_.instances[i].kind != InstanceKind::kC) continue;
      auto* c_api = static_cast<CWorkerInstance*>(instances_[i].get());
      drain_began_ = clock_->now();
      DrainResult result;
      const std::string probe = c_api->drain_probing_start(result);
      if (!probe.empty() && probe.rfind("refused", 0) != 0) {
        found.push_back({"C API worker driven from two threads",
                         "sluice_worker_start during run_until_idle was " + probe});
      }
      return " (instance " + std::to_string(i) + " delivered " + std::to_string(result.delivered) +
             "; sluice_worker_start from another thread: " + (probe.empty() ? "no call" : probe) +
             ")";
    }
    return " (skipped: no C API instance)";
  }

  std::string remove_and_add_again(const Operation& op, std::vector<Violation>& found) {
    ConsumerConfig& consumer = config_.consumers[op.consumer % config_.consumers.size()];
    RemoveConsumerOptions removal;
    removal.force = true;
    const ConsumerRemoval removed = remove_consumer(*db_, consumer.name, removal, options_);
    if (!removed.removed) found.push_back({"consumer removal", consumer.name + " was not removed"});
    // New topics (never none), all from the oldest retained event or from now.
    std::vector<std::string> topics;
    for (std::size_t t = 0; t < config_.topics.size(); ++t) {
      if ((op.pick >> t) & 1) topics.push_back(config_.topics[t]);
    }
    if (topics.empty()) topics.push_back(config_.topics[(op.pick >> 8) % config_.topics.size()]);
    consumer.topics = topics;
    std::erase_if(consumer.batch_topics, [&](const std::string& topic) {
      return std::find(topics.begin(), topics.end(), topic) == topics.end();
    });
    consumer.oldest = ((op.pick >> 4) & 1) != 0;
    ++consumer.generation;
    // Instance 0 (and the C API's and SQL's in a seam sequence) subscribe the consumer anew; every
    // other one keeps its handlers, subscribed for the removed consumer: they must deliver nothing
    // more for it.
    std::string restarted;
    for (std::size_t i = 0; i < instances_.size(); ++i) {
      InstanceConfig& instance = config_.instances[i];
      const bool again =
          i == 0 || instance.kind == InstanceKind::kC ||
          (instance.kind == InstanceKind::kSql ? consumer.no_snooze : !config_.stale_workers);
      if (!again) {
        instance.handles.erase(consumer.name);
        continue;
      }
      instance.handles[consumer.name] = std::set<std::string>(topics.begin(), topics.end());
      if (i == 0) {
        // The first subscription creates the consumer: the model's set of events starts here.
        instances_[i].reset();
        model_.add_again(consumer.name, consumer.oldest);
        instances_[i] = start(i);
      } else {
        instances_[i].reset();
        instances_[i] = start(i);
      }
      last_drain_[i].reset();
      latest_possible_[i].reset();
      restarted += " " + std::to_string(i);
    }
    std::string line = " (" + consumer.name + " removed with " +
                       std::to_string(removed.deliveries) + " deliveries, added again on";
    for (const std::string& topic : topics) line += " " + topic;
    return line + (consumer.oldest ? " from the oldest" : " from now") + ", instances" + restarted +
           " subscribe it)";
  }

  std::string leave_mid_claim(const Operation& op, std::vector<Violation>& found) {
    SqlInstance* sql = nullptr;
    for (std::size_t i = 0; i < instances_.size(); ++i) {
      if (config_.instances[i].kind == InstanceKind::kSql)
        sql = static_cast<SqlInstance*>(instances_[i].get());
    }
    if (sql == nullptr) return " (skipped: no SQL instance)";
    const bool release = op.kind == OpKind::kSqlRelease;
    const auto [consumer, left] = sql->leave_mid_claim(op.pick % 4, release);
    if (consumer.empty()) return " (nothing to claim)";
    if (release) return " (" + consumer + " gave back " + std::to_string(left.size()) + ")";
    model_.crashed(consumer, left, clock_->now());
    return " (" + consumer + " closed with " + std::to_string(left.size()) +
           " claimed; instance 0" + drain(0, found) + ")";
  }

  std::string dead_letter_operation(const Operation& op, std::vector<Violation>& found) {
    DeadLetterFilter filter;
    ReferenceModel::DeadFilter matches = [](const ModelEvent&, const std::string&, const Pair&) {
      return true;
    };
    std::string what = "all";
    const std::string consumer = config_.consumers[(op.pick >> 8) % config_.consumers.size()].name;
    const std::string topic = config_.topics[(op.pick >> 16) % config_.topics.size()];
    switch (op.pick % 4) {
      case 0:
        break;
      case 1:
        filter.consumer = consumer;
        what = "consumer " + consumer;
        matches = [consumer](const ModelEvent&, const std::string& c, const Pair&) {
          return c == consumer;
        };
        break;
      case 2:
        filter.topic = topic;
        what = "topic " + topic;
        matches = [topic](const ModelEvent& e, const std::string&, const Pair&) {
          return e.topic == topic;
        };
        break;
      default: {
        // Every other dead event, by ID.
        std::set<std::string> ids;
        std::size_t index = 0;
        for (const auto& [_, e] : model_.events()) {
          for (const auto& [c, pair] : e.pairs) {
            if (pair.state == PairState::kDead && index++ % 2 == 0) ids.insert(e.id);
          }
        }
        if (ids.empty()) return " (no dead letter to name)";
        filter.event_ids.assign(ids.begin(), ids.end());
        what = std::to_string(ids.size()) + " event id(s)";
        matches = [ids](const ModelEvent& e, const std::string&, const Pair&) {
          return ids.count(e.id) > 0;
        };
      }
    }
    const bool replay = op.kind == OpKind::kReplay;
    const long long engine = replay ? replay_dead_letters(*db_, filter, options_)
                                    : discard_dead_letters(*db_, filter, "model discard", options_);
    const long long expected = replay ? model_.replay(matches) : model_.discard(matches);
    if (engine != expected) {
      found.push_back({replay ? "replay count" : "discard count",
                       what + ": the engine reports " + std::to_string(engine) +
                           ", the model expects " + std::to_string(expected)});
    }
    return " (" + what + ": " + std::to_string(engine) + ")";
  }

  std::string backfill_between_drains(const Operation& op, std::vector<Violation>& found) {
    const std::string consumer = config_.consumers[op.consumer % config_.consumers.size()].name;
    std::vector<const ModelEvent*> candidates;
    for (const auto& [_, e] : model_.events()) {
      if (!e.pruned && e.pairs.count(consumer) > 0) candidates.push_back(&e);
    }
    if (candidates.empty()) return " (nothing to backfill)";
    const ModelEvent& from = *candidates[op.pick % candidates.size()];
    const long long engine = backfill(*db_, consumer, {from.id}, options_);
    const long long expected = model_.backfill(consumer, from.seq, {});
    if (engine != expected) {
      found.push_back({"backfill count", consumer + " from n=" + std::to_string(from.n) +
                                             ": the engine queued " + std::to_string(engine) +
                                             ", the model expects " + std::to_string(expected)});
    }
    return " (from n=" + std::to_string(from.n) + ": " + std::to_string(engine) + ")";
  }

  std::string prune_events(const Operation& op, std::vector<Violation>& found) {
    const Duration retentions[] = {Duration(0), Duration(2000), std::chrono::minutes(10)};
    const Duration retention = retentions[op.pick % 3];
    PruneOptions prune_options;
    prune_options.force = true;
    const long long engine = prune(*db_, retention, prune_options, options_);
    // Read after the prune: on real time, the engine's cutoff is at most this.
    const TimePoint cutoff = clock_->now() - retention;
    long long gone = 0;
    for (const auto& [n, e] : model_.events()) {
      if (e.pruned) continue;
      try {
        find_event(*db_, e.id);
      } catch (const NotFound&) {
        model_.pruned(n, cutoff, found);
        ++gone;
      }
    }
    if (gone != engine) {
      found.push_back({"prune count", "prune reported " + std::to_string(engine) + ", " +
                                          std::to_string(gone) + " events are gone"});
    }
    return " (" + std::to_string(engine) + " pruned)";
  }

  // A copy: removing and adding a consumer again changes its topics and generation, and the
  // instances' handlers.
  SequenceConfig config_;
  const std::vector<std::string>& ignored_;
  torture::TempDir dir_;
  std::shared_ptr<ManualClock> manual_;
  // The manual clock, or the system's in a seam sequence.
  std::shared_ptr<Clock> clock_;
  std::string path_;
  Options options_;
  std::optional<SQLite::Database> db_;  // the app's and the operator's connection
  std::unique_ptr<Outbox> outbox_;
  ReferenceModel model_;
  std::vector<std::unique_ptr<Instance>> instances_;
  // The clock's reading at each instance's last drain; none before its first.
  std::vector<std::optional<TimePoint>> last_drain_;
  // Set once a worker that is gone wrote at a clock reading stepped during a drain of instance 0;
  // from then on, the latest clock reading each instance may have made.
  bool vanished_writer_ = false;
  std::vector<std::optional<TimePoint>> latest_possible_;
  long long next_n_ = 1;
  // Handler calls may come from a worker's helper thread (batch handlers).
  std::mutex mutex_;
  std::vector<Violation> call_violations_;
  long long calls_ = 0;
  std::optional<std::string> in_flight_backfill_;
  std::string in_flight_note_;
  bool in_flight_replay_ = false;
  bool in_flight_foreign_lock_ = false;
  bool in_flight_stall_ = false;
  const std::thread::id sequence_thread_ = std::this_thread::get_id();
  // kThrottleInFlight: the drain's next call on its thread throttles for throttle_delay_.
  bool throttle_next_ = false;
  Duration throttle_delay_{0};
  std::optional<std::string> throttled_consumer_;  // whose call it throttled
  TimePoint drain_began_;
  long long replay_at_call_ = 0;
};

}  // namespace

SequenceOutcome run_sequence(const SequenceConfig& config, const std::vector<Operation>& ops,
                             const std::vector<std::string>& ignored) {
  Sequence sequence(config, ignored);
  return sequence.run(ops);
}

}  // namespace sluice::model
