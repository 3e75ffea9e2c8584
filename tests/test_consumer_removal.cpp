#include <doctest/doctest.h>

#include <map>

#include "process_identity.hpp"
#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using std::chrono::hours;

namespace {

// Rows of `table` that belong to consumer `name`.
long long rows_of(SQLite::Database& db, const std::string& table, const std::string& name) {
  return count(db, table,
               "consumer_id = (SELECT id FROM sluice_consumers WHERE name = '" + name + "')");
}

const char* const kConsumerTables[] = {"sluice_subscriptions", "sluice_deliveries", "sluice_inbox",
                                       "sluice_attempts", "sluice_claims"};

// Consumers "keep" and "drop" of topic "t": each delivers 1,500 events (more than one of the
// removal's short transactions), dead-letters one and retries one into the attempt history.
struct TwoConsumers {
  explicit TwoConsumers(Fixture& fixture) : f(fixture), worker(f.db, f.options) {
    for (const char* name : {"keep", "drop"}) {
      worker.subscribe(name, "t", [this, name](const Event& e, Context&) {
        if (e.payload == "\"dead\"") throw PermanentError("never");
        if (e.payload == "\"flaky\"" && ++flaky_calls[name] == 1) {
          throw std::runtime_error("later");
        }
      });
    }
    for (int i = 0; i < 1500; ++i) f.publish("t");
    f.publish("t", "\"dead\"");
    f.publish("t", "\"flaky\"");
    worker.run_until_idle();
    f.clock->advance(std::chrono::seconds(5));
    worker.run_until_idle();
    f.clock->advance(hours(2));  // past the window in which activity counts as a live worker
  }
  Fixture& f;
  Worker worker;
  std::map<std::string, int> flaky_calls;
};

}  // namespace

TEST_CASE("remove_consumer removes all of its state and nothing of another consumer") {
  Fixture f;
  TwoConsumers setup(f);
  std::map<std::string, long long> kept;
  for (const char* table : kConsumerTables) kept[table] = rows_of(f.db, table, "keep");
  REQUIRE(rows_of(f.db, "sluice_inbox", "drop") == 1501);
  REQUIRE(rows_of(f.db, "sluice_deliveries", "drop") == 1);
  REQUIRE(rows_of(f.db, "sluice_attempts", "drop") >= 1);
  const long long attempts = rows_of(f.db, "sluice_attempts", "drop");
  const long long drop_id =
      f.db.execAndGet("SELECT id FROM sluice_consumers WHERE name = 'drop'").getInt64();

  const ConsumerRemoval removed = remove_consumer(f.db, "drop", {}, f.options);
  CHECK(removed.removed);
  CHECK(removed.inbox == 1501);
  CHECK(removed.deliveries == 1);
  CHECK(removed.dead_letters == 1);
  CHECK(removed.attempts == attempts);
  CHECK(removed.claims == 0);
  CHECK(count(f.db, "sluice_consumers", "name = 'drop'") == 0);
  for (const char* table : kConsumerTables) {
    CAPTURE(table);
    CHECK(count(f.db, table, "consumer_id = " + std::to_string(drop_id)) == 0);
    CHECK(rows_of(f.db, table, "keep") == kept[table]);
  }
  CHECK_THROWS_AS(remove_consumer(f.db, "drop", {}, f.options), NotFound);
}

TEST_CASE("remove_consumer's dry run counts and writes nothing") {
  Fixture f;
  TwoConsumers setup(f);
  const int changes = f.db.getTotalChanges();
  const ConsumerRemoval would = remove_consumer(f.db, "drop", {.dry_run = true}, f.options);
  CHECK_FALSE(would.removed);
  CHECK(would.inbox == 1501);
  CHECK(would.last_active.has_value());
  CHECK(would.live_worker.empty());
  CHECK(f.db.getTotalChanges() == changes);
  CHECK(rows_of(f.db, "sluice_inbox", "drop") == 1501);
}

TEST_CASE("remove_consumer refuses while a worker of it looks alive, unless forced") {
  Fixture f;
  TwoConsumers setup(f);
  SUBCASE("recent work") {
    f.publish("t");
    setup.worker.run_until_idle();
    CHECK_THROWS_WITH_AS(remove_consumer(f.db, "drop", {}, f.options),
                         doctest::Contains("looks alive"), InvalidArgument);
    // A dry run is a preview: never refused, it says why the removal would be.
    const ConsumerRemoval would = remove_consumer(f.db, "drop", {.dry_run = true}, f.options);
    CHECK_FALSE(would.removed);
    CHECK(would.live_worker.find("less than 1h ago") != std::string::npos);
    CHECK(remove_consumer(f.db, "drop", {.active_within = std::chrono::seconds(0)}, f.options)
              .removed);
  }
  SUBCASE("a claim whose process runs") {
    WorkerIdentity running;
    SQLite::Statement claim(f.db,
                            "INSERT INTO sluice_claims (consumer_id, owner, pid, from_seq, to_seq, "
                            "lease_until, created_at) SELECT id, ?, ?, 0, 0, 0, 0 FROM "
                            "sluice_consumers WHERE name = 'drop'");
    claim.bind(1, running.owner());
    claim.bind(2, static_cast<int64_t>(running.pid()));
    claim.exec();
    CHECK_THROWS_WITH_AS(remove_consumer(f.db, "drop", {}, f.options),
                         doctest::Contains("a claim of process"), InvalidArgument);
    CHECK(rows_of(f.db, "sluice_inbox", "drop") == 1501);
    const ConsumerRemoval forced = remove_consumer(f.db, "drop", {.force = true}, f.options);
    CHECK(forced.removed);
    CHECK(forced.claims == 1);
    CHECK(count(f.db, "sluice_claims") == 0);
  }
}
