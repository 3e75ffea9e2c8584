// The testing kit's fixture: a :memory: database, a manual clock and a worker drained in the
// caller's thread.
#include <SQLiteCpp/Backup.h>

#include <filesystem>
#include <map>

#include "exclusive_use.hpp"
#include "handler_context.hpp"
#include "sluice/database.hpp"
#include "sluice/inspect.hpp"
#include "sluice/outbox.hpp"
#include "sluice/testing.hpp"
#include "sqlite_error.hpp"

namespace sluice::testing {
namespace {

SQLite::Database open_memory(const Options& options) { return open_database(":memory:", options); }

// The incident file copied into a fresh :memory: connection, its schema brought up to date.
SQLite::Database load_incident(const std::string& path, const Options& options) {
  if (!std::filesystem::exists(path)) {
    throw NotFound("sluice::testing: load incident: no file at '" + path + "'");
  }
  SQLite::Database memory(":memory:", SQLite::OPEN_READWRITE);
  const std::string operation = "load incident '" + path + "'";
  guarded(operation.c_str(), [&] {
    SQLite::Database file(path, SQLite::OPEN_READONLY);
    // Read first so that a file that is not a database says so (the backup reports no code).
    file.execAndGet("SELECT count(*) FROM sqlite_master");
    SQLite::Backup copy(memory, file);
    copy.executeStep();
  });
  if (stored_schema_version(memory) == 0) {
    throw InvalidArgument("sluice::testing: load incident: '" + path +
                          "' holds no sluice tables (write it with `sluice export`)");
  }
  configure_connection(memory, options);
  ensure_schema(memory);
  return memory;
}

// The latest time an incident records: its clock starts there, so that its retries are due.
TimePoint latest_recorded_time(SQLite::Database& db) {
  return guarded("load incident", [&] {
    return TimePoint(
        Duration(db.execAndGet("SELECT coalesce(max(t), 0) FROM ("
                               "SELECT max(created_at) AS t FROM sluice_events UNION ALL "
                               "SELECT max(at) FROM sluice_attempts UNION ALL "
                               "SELECT max(last_failed_at) FROM sluice_deliveries)")
                     .getInt64()));
  });
}

// When the next delivery falls due after the clock's time, if any is waiting.
std::optional<TimePoint> next_due_after(SQLite::Database& db, TimePoint now) {
  return guarded("find the next due delivery", [&] {
    SQLite::Statement query(db,
                            "SELECT min(next_attempt_at) FROM sluice_deliveries "
                            "WHERE state = 'pending' AND next_attempt_at > ?");
    query.bind(1, static_cast<std::int64_t>(now.time_since_epoch().count()));
    std::optional<TimePoint> due;
    if (query.executeStep() && !query.getColumn(0).isNull()) {
      due = TimePoint(Duration(query.getColumn(0).getInt64()));
    }
    return due;
  });
}

}  // namespace

struct Harness::Impl {
  Impl(SQLite::Database database, std::shared_ptr<ManualClock> manual_clock, Options opts)
      : db(std::move(database)),
        clock(std::move(manual_clock)),
        options(with_clock(std::move(opts), clock)),
        worker(db, options),
        outbox(db, options) {}

  static Options with_clock(Options options, std::shared_ptr<ManualClock> clock) {
    options.clock = std::move(clock);
    return options;
  }

  SQLite::Database db;
  std::shared_ptr<ManualClock> clock;
  Options options;
  Worker worker;
  Outbox outbox;
  // The mode each consumer was subscribed with on this harness, for run().
  std::map<std::string, DeliveryMode> modes;
  // The test thread's; a second thread's drain or run would share the one connection.
  ExclusiveUse use;
};

Harness::Harness(Options options) {
  options.validate();
  auto clock = std::make_shared<ManualClock>();
  options.clock = clock;
  impl_ = std::make_unique<Impl>(open_memory(options), std::move(clock), std::move(options));
}

Harness Harness::from_incident(const std::string& path, Options options) {
  options.validate();
  SQLite::Database db = load_incident(path, options);
  auto clock = std::make_shared<ManualClock>();
  clock->set(std::max(clock->now(), latest_recorded_time(db)));
  return Harness(std::make_unique<Impl>(std::move(db), std::move(clock), std::move(options)));
}

Harness Harness::open(const std::string& path, Options options) {
  options.validate();
  auto clock = std::make_shared<ManualClock>();
  options.clock = clock;
  SQLite::Database db = open_database(path, options);
  return Harness(std::make_unique<Impl>(std::move(db), std::move(clock), std::move(options)));
}

Harness::Harness(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Harness::Harness(Harness&&) noexcept = default;
Harness& Harness::operator=(Harness&&) noexcept = default;
Harness::~Harness() = default;

SQLite::Database& Harness::db() { return impl_->db; }
ManualClock& Harness::clock() { return *impl_->clock; }
const Options& Harness::options() const { return impl_->options; }
Worker& Harness::worker() { return impl_->worker; }

void Harness::subscribe(const std::string& consumer, const std::string& topic, Handler handler,
                        const ConsumerOptions& options) {
  impl_->worker.subscribe(consumer, topic, std::move(handler), options);
  impl_->modes[consumer] = options.mode;
}

void Harness::subscribe_batch(const std::string& consumer, const std::string& topic,
                              BatchHandler handler, ConsumerOptions options) {
  const DeliveryMode mode = options.mode;
  impl_->worker.subscribe_batch(consumer, topic, std::move(handler), std::move(options));
  impl_->modes[consumer] = mode;
}

EnqueueResult Harness::enqueue(const NewEvent& event) {
  ExclusiveUse::Scope use(impl_->use, "sluice::testing: Harness::enqueue");
  return impl_->outbox.enqueue_now(event);
}

std::int64_t Harness::mark() { return newest_event_seq(impl_->db); }

DrainResult Harness::drain() {
  ExclusiveUse::Scope use(impl_->use, "sluice::testing: Harness::drain");
  return impl_->worker.run_until_idle();
}

DrainResult Harness::advance(Duration by) {
  ExclusiveUse::Scope use(impl_->use, "sluice::testing: Harness::advance");
  if (by < Duration(0)) {
    throw InvalidArgument("sluice::testing: advance: the duration is negative (" +
                          std::to_string(by.count()) + " ms)");
  }
  const TimePoint until = impl_->clock->now() + by;
  DrainResult total = drain();
  auto add = [&total](const DrainResult& step) {
    total.delivered += step.delivered;
    total.retried += step.retried;
    total.dead_lettered += step.dead_lettered;
  };
  while (auto due = next_due_after(impl_->db, impl_->clock->now())) {
    if (*due > until) break;
    impl_->clock->set(*due);
    add(drain());
  }
  impl_->clock->set(until);
  add(drain());
  return total;
}

DeliveryMode Harness::declared_mode(const std::string& consumer) {
  if (const auto found = impl_->modes.find(consumer); found != impl_->modes.end()) {
    return found->second;
  }
  // A consumer of a loaded incident file is known by its row.
  return guarded("run handler", [&] {
    SQLite::Statement query(impl_->db, "SELECT mode FROM sluice_consumers WHERE name = ?");
    query.bind(1, consumer);
    return query.executeStep() && query.getColumn(0).getString() == "outside-transaction"
               ? DeliveryMode::kOutsideTransaction
               : DeliveryMode::kInTransaction;
  });
}

Outcome Harness::run(const Handler& handler, const Event& event, int attempt,
                     const std::string& consumer) {
  ExclusiveUse::Scope use(impl_->use, "sluice::testing: Harness::run");
  if (declared_mode(consumer) == DeliveryMode::kOutsideTransaction) {
    HandlerContext context(consumer, attempt, nullptr, nullptr);
    return call_outside_handler(handler, event, context);
  }
  HandlerContext context(consumer, attempt, &impl_->db, &impl_->outbox);
  guarded("run handler", [&] { impl_->db.exec("BEGIN IMMEDIATE"); });
  Outcome outcome;
  try {
    // Its own guard, nested in the worker's: as in a delivery, the handler may not end the
    // transaction it runs in.
    TransactionControlGuard guard(impl_->db);
    outcome = call_handler(handler, event, context, guard);
  } catch (...) {
    impl_->db.exec("ROLLBACK");
    throw;
  }
  guarded("run handler",
          [&] { impl_->db.exec(outcome.kind == Outcome::Kind::kDone ? "COMMIT" : "ROLLBACK"); });
  return outcome;
}

}  // namespace sluice::testing
