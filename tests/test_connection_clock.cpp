// One place to give the clock: the clock a connection was opened with serves every call on it
// whose Options name none, so a manual-clock test cannot fall back to the system clock by
// forgetting to pass Options.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <sluice/sluice.hpp>

using namespace sluice;
using std::chrono::hours;

namespace {

// Long before any system clock a test runs on.
const TimePoint kLongAgo{hours(24 * 365 * 10)};

Options manual(const std::shared_ptr<ManualClock>& clock) {
  Options options;
  options.clock = clock;
  return options;
}

TimePoint created_at(SQLite::Database& db, const std::string& id) {
  return find_event(db, id).created_at;
}

}  // namespace

TEST_CASE("calls without Options on a connection opened with a manual clock read that clock") {
  auto clock = std::make_shared<ManualClock>(kLongAgo);
  SQLite::Database db = open_database(":memory:", manual(clock));
  Worker worker(db);
  worker.subscribe("billing", "order.placed",
                   [](const Event&, Context&) { throw PermanentError("declined"); });
  const std::string id = Outbox(db).enqueue_now({.topic = "order.placed"}).id;
  CHECK(created_at(db, id) == kLongAgo);

  clock->advance(hours(1));
  const auto stats = consumer_stats(db);
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].lag == hours(1));

  CHECK(worker.run_until_idle().dead_lettered == 1);
  const auto dead = list_dead_letters(db, {});
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].last_failed_at == kLongAgo + hours(1));
}

TEST_CASE("Options that name a clock win over the connection's") {
  auto connection_clock = std::make_shared<ManualClock>(kLongAgo);
  auto own = std::make_shared<ManualClock>(kLongAgo + hours(5));
  SQLite::Database db = open_database(":memory:", manual(connection_clock));
  const std::string id = Outbox(db, manual(own)).enqueue_now({.topic = "t"}).id;
  CHECK(created_at(db, id) == kLongAgo + hours(5));
}

TEST_CASE("an app's own connection takes its clock from configure_connection") {
  auto clock = std::make_shared<ManualClock>(kLongAgo);
  SQLite::Database db(":memory:", SQLite::OPEN_READWRITE);
  configure_connection(db, manual(clock));
  ensure_schema(db);
  CHECK(created_at(db, Outbox(db).enqueue_now({.topic = "t"}).id) == kLongAgo);
}

TEST_CASE("a connection's clock ends with the connection") {
  // SQLite often hands a new connection the address of one just closed: a new connection opened
  // without a clock must not inherit the old one's.
  for (int round = 0; round < 3; ++round) {
    auto clock = std::make_shared<ManualClock>(kLongAgo);
    { SQLite::Database with_clock = open_database(":memory:", manual(clock)); }
    SQLite::Database db = open_database(":memory:");
    CHECK(created_at(db, Outbox(db).enqueue_now({.topic = "t"}).id) > kLongAgo + hours(24 * 365));
  }
}
