// A kit for testing an app's handlers: a fixture with a :memory: database and a manual clock that
// delivers synchronously, and assertions on what was enqueued and dead-lettered. The assertions
// are plain functions that return what they found or throw AssertionFailed, so they work under
// any test framework (or none).
//
// Each assertion takes the caller's place in the source as a defaulted last argument: its message
// starts with "FILE:LINE: ", the assertion's line in the test, whichever line the framework names
// for the exception (doctest and Catch2 name the test case's). To have the framework point at the
// assertion too, wrap it: REQUIRE_NOTHROW(require_delivered(...)) in doctest and Catch2,
// ASSERT_NO_THROW(require_delivered(...)) in GoogleTest.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/clock.hpp"
#include "sluice/consumer.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/event.hpp"
#include "sluice/inspect.hpp"
#include "sluice/options.hpp"
#include "sluice/worker.hpp"

namespace sluice::testing {

// A testing assertion did not hold; what() says what was expected and what was found.
class AssertionFailed : public Error {
 public:
  using Error::Error;
};

// A place in the source: the caller's, when an assertion takes it as a defaulted last argument.
// Like std::source_location, which it stands in for because libstdc++ 12's needs a builtin that
// clang 14 (Debian 12's) lacks, so a header using it does not compile there; these builtins both
// compilers have, and both evaluate them at the outermost call when they default an argument.
struct SourceLocation {
  static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                          unsigned line = __builtin_LINE()) noexcept {
    return SourceLocation{file, line};
  }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr unsigned line() const noexcept { return line_; }

  const char* file_;
  unsigned line_;
};

// Which events an assertion looks for. Fields left unset match anything.
struct EventMatcher {
  // The event's topic. Required.
  std::string topic;
  // The payload equals this JSON document, compared as JSON (spacing and key order ignored).
  std::optional<std::string> payload;
  // The payload is an object holding every member of this JSON object, with equal values.
  std::optional<std::string> payload_includes;
  std::optional<std::string> key;
  std::optional<std::string> dedup_key;
  // Only events enqueued after this mark (Harness::mark(), newest_event_seq()); 0 means all.
  std::int64_t after_seq = 0;
};

// The retained events matching `matcher`, oldest first. Throws InvalidArgument for an empty
// topic or a matcher payload that is not JSON (payload_includes: not a JSON object).
std::vector<Event> find_enqueued(SQLite::Database& db, const EventMatcher& matcher);

// The events matching `matcher`, oldest first; throws AssertionFailed, listing the events of
// the range that were there, when there is none.
std::vector<Event> require_enqueued(SQLite::Database& db, const EventMatcher& matcher,
                                    SourceLocation where = SourceLocation::current());

// Throws AssertionFailed, naming the matching events, when any event matches `matcher`.
void require_not_enqueued(SQLite::Database& db, const EventMatcher& matcher,
                          SourceLocation where = SourceLocation::current());

// Runs `call`, then require_enqueued() for the events it enqueued (matcher.after_seq is
// replaced by the mark taken before the call).
std::vector<Event> require_enqueued_by(SQLite::Database& db, const EventMatcher& matcher,
                                       const std::function<void()>& call,
                                       SourceLocation where = SourceLocation::current());

// Runs `call`, then require_not_enqueued() for the events it enqueued.
void require_not_enqueued_by(SQLite::Database& db, const EventMatcher& matcher,
                             const std::function<void()>& call,
                             SourceLocation where = SourceLocation::current());

// The consumer's dead letters (discarded ones excluded), oldest failure first. Throws NotFound
// for an unknown consumer.
std::vector<DeadLetter> dead_letters_of(SQLite::Database& db, const std::string& consumer);

// The consumer's dead letter of the event `event_id`; throws AssertionFailed, saying the event's
// actual state for the consumer and listing the consumer's dead letters, when it has none for
// that event.
DeadLetter require_dead_lettered(SQLite::Database& db, const std::string& consumer,
                                 const std::string& event_id,
                                 SourceLocation where = SourceLocation::current());

// The event's state for the consumer when it was delivered to it; throws AssertionFailed saying
// its actual state (pending, retrying with its attempts and last error, dead, ...) otherwise.
DeliveryStatus require_delivered(SQLite::Database& db, const std::string& consumer,
                                 const std::string& event_id,
                                 SourceLocation where = SourceLocation::current());

// The event's state for the consumer when it failed and waits for a retry, with its next attempt
// at `next_at` if given; throws AssertionFailed saying its actual state otherwise.
DeliveryStatus require_retrying(SQLite::Database& db, const std::string& consumer,
                                const std::string& event_id,
                                std::optional<TimePoint> next_at = std::nullopt,
                                SourceLocation where = SourceLocation::current());

// Not thread-safe: one test thread owns it; enqueue(), drain(), advance() and run() from a second
// thread while one of them runs throw InvalidArgument. A :memory: database with the sluice schema,
// a ManualClock, and a Worker on that database that delivers only when asked, in the caller's
// thread. Subscribe the app's handlers, enqueue, then drain() or advance(): every event that
// falls due, including those the handlers enqueue, is delivered before they return.
class Harness {
 public:
  // `options` as the app uses them, except that `clock` is replaced by the harness's clock,
  // which starts at ManualClock's default time.
  explicit Harness(Options options = {});
  // Loads an incident file written by `sluice export` into the :memory: database (the file is
  // only read), migrating its schema if older; the clock starts at the latest time the file
  // records. Its event is dead for the consumers that failed it: replay_dead_letters() and
  // drain() to deliver it again, or run() a handler on find_event(db(), id). Throws NotFound for
  // a missing file, InvalidArgument for a database without sluice tables, NotADatabaseError or
  // SchemaVersionError.
  static Harness from_incident(const std::string& path, Options options = {});
  // As Harness(options), on the file `path` (created, or its schema migrated, if needed) instead
  // of a :memory: database, so that the test can look at it afterwards (`sluice events --db`);
  // ":memory:" or "" is Harness(options). Throws as open_database does.
  static Harness open(const std::string& path, Options options = {});
  Harness(Harness&&) noexcept;
  Harness& operator=(Harness&&) noexcept;
  ~Harness();

  // The :memory: database, for the app's own tables and for the assertions above.
  SQLite::Database& db();
  ManualClock& clock();
  // The options given, with the harness's clock: pass them to sluice calls that take Options.
  const Options& options() const;
  Worker& worker();

  // Worker::subscribe on the harness's worker. Subscribe before enqueueing: a consumer starts
  // from the events enqueued after it unless `options.start_from` is StartFrom::kOldest.
  void subscribe(const std::string& consumer, const std::string& topic, Handler handler,
                 const ConsumerOptions& options = {});
  void subscribe_batch(const std::string& consumer, const std::string& topic, BatchHandler handler,
                       ConsumerOptions options = {});

  // Outbox::enqueue_now on the harness's database: commits `event` at once.
  EnqueueResult enqueue(const NewEvent& event);

  // The newest event's seq: a mark for EventMatcher::after_seq.
  std::int64_t mark();

  // Delivers until nothing is due at the clock's current time, events enqueued by handlers
  // included. A handler that enqueues an event for itself on every call never lets it return.
  DrainResult drain();

  // Moves the clock forward by `by`, stopping at each time something falls due on the way
  // (a retry, a snooze, a not_before time) to drain() there, so that a retry sequence plays out
  // as it would in real time. Returns what all the drains did. Throws InvalidArgument for a
  // negative duration.
  DrainResult advance(Duration by);

  // Calls `handler` once on `event` as consumer `consumer` would on attempt `attempt`, without
  // the worker, in the consumer's declared mode (as subscribed on this harness, or as recorded
  // in a loaded incident file; in-transaction for a consumer neither names). In-transaction: in
  // a transaction on db() that commits if the outcome is done and rolls back otherwise.
  // Outside-transaction: with no transaction, ctx.db() and ctx.enqueue() raising
  // TransactionError as in production. Returns what the handler asked for: done when it returned
  // normally (unless it called snooze, retry or dead_letter on its Context, the last call
  // deciding), permanent when it threw PermanentError, retry with what() for any other
  // exception.
  Outcome run(const Handler& handler, const Event& event, int attempt = 1,
              const std::string& consumer = "test");

 private:
  DeliveryMode declared_mode(const std::string& consumer);

  struct Impl;
  explicit Harness(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::testing
