// Operators repair a live pipeline: a worker runs in another process while the CLI replays its
// dead letter; the replayed event is applied exactly once, within the worker's poll interval.
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>

#include <csignal>
#include <thread>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

constexpr milliseconds kPollInterval{200};

// Polls `condition` until it holds or `timeout` passes; returns whether it held.
template <typename Condition>
bool eventually(Condition condition, milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (!condition()) {
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

long long count_where(const CliFixture& f, const std::string& sql) {
  SQLite::Database db(f.db_path, SQLite::OPEN_READONLY);
  return db.execAndGet(sql).getInt64();
}

long long applied(const CliFixture& f, const std::string& event_id) {
  SQLite::Database db(f.db_path, SQLite::OPEN_READONLY);
  SQLite::Statement query(db, "SELECT count(*) FROM applied WHERE event_id = ?");
  query.bind(1, event_id);
  query.executeStep();
  return query.getColumn(0).getInt64();
}

}  // namespace

TEST_CASE("the CLI replays a dead letter while a worker in another process runs") {
  CliFixture f;
  f.init();
  ChildProcess worker(
      {required_env("SLUICE_TEST_WORKER"), f.db_path, std::to_string(kPollInterval.count())});
  REQUIRE(worker.wait_for_output(ChildProcess::Stream::kOut, "ready", seconds(30)));

  const std::string poison = f.sluice({"enqueue", "--topic", "order.placed", "--payload",
                                       "{\"order\":42,\"poison\":true}", "--id", "poison-42"})
                                 .out;
  REQUIRE(poison == "poison-42\n");
  const std::string good = f.enqueue_order(43);
  REQUIRE(eventually(
      [&]() {
        return f.json({"dlq", "list", "--consumer", "billing"})["dead_letters"].size() == 1 &&
               applied(f, good) == 1;
      },
      seconds(30)));
  const auto dead = f.json({"dlq", "show", "poison-42"})["dead_letters"][0];
  CHECK(dead["last_error"] == "order 42 rejected: card 'poison-42' declined");
  CHECK(applied(f, "poison-42") == 0);

  // The operator fixes the cause, then replays.
  {
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.setBusyTimeout(10000);
    db.exec("INSERT INTO flags (name) VALUES ('poison-fixed')");
  }
  const auto replay = f.sluice({"dlq", "replay", "poison-42"});
  const auto replayed_at = SteadyClock::now();
  REQUIRE(replay.exit_code == 0);
  CHECK(replay.out == "replayed 1 dead letter(s)\n");

  REQUIRE(eventually([&]() { return applied(f, "poison-42") > 0; }, seconds(30)));
  const auto pickup = std::chrono::duration_cast<milliseconds>(SteadyClock::now() - replayed_at);
  MESSAGE("replayed dead letter applied " << pickup.count() << " ms after the replay (poll "
                                          << kPollInterval.count() << " ms)");
  // The poll interval plus room for a loaded 2-core machine under sanitizers.
  CHECK(pickup < kPollInterval + seconds(2));

  worker.signal(SIGTERM);
  REQUIRE(worker.wait(seconds(30)) == 0);
  CHECK(applied(f, "poison-42") == 1);
  CHECK(applied(f, good) == 1);
  CHECK(f.json({"dlq", "list"})["dead_letters"].empty());
  const auto deliveries = f.json({"show", "poison-42"})["deliveries"];
  REQUIRE(deliveries.size() == 1);
  CHECK(deliveries[0]["state"] == "delivered");
}

TEST_CASE("dlq replay --all returns beside a worker that dead-letters the events again") {
  CliFixture f;
  f.init();
  // Polling every millisecond, the worker fails replayed events again while the replay runs. A
  // replay that re-selects "the first dead letters" until none is left never returned (issue 19).
  ChildProcess worker({required_env("SLUICE_TEST_WORKER"), f.db_path, "1"});
  REQUIRE(worker.wait_for_output(ChildProcess::Stream::kOut, "ready", seconds(30)));
  constexpr int kDead = 5000;
  {
    SQLite::Database db = sluice::open_database(f.db_path, f.options());
    sluice::Outbox outbox(db, f.options());
    std::vector<sluice::NewEvent> events;
    for (int i = 0; i < kDead; ++i) {
      events.push_back({.topic = "order.placed",
                        .payload = "{\"order\":" + std::to_string(i) + ",\"poison\":true}"});
    }
    SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
    outbox.enqueue_batch(events);
    tx.commit();
  }
  const std::string dead = "SELECT count(*) FROM sluice_deliveries WHERE state = 'dead'";
  REQUIRE(eventually([&]() { return count_where(f, dead) == kDead; }, seconds(60)));

  const auto started = SteadyClock::now();
  ChildProcess replay({cli_path(), "--db", f.db_path, "dlq", "replay", "--all", "--json"},
                      CliFixture::clean_env({}));
  const std::optional<int> exit_code = replay.wait(seconds(60));
  REQUIRE_MESSAGE(exit_code.has_value(), "dlq replay --all still running after 60 s");
  MESSAGE(
      "replayed " << kDead << " dead letters beside a failing worker in "
                  << std::chrono::duration_cast<milliseconds>(SteadyClock::now() - started).count()
                  << " ms");
  CHECK(*exit_code == 0);
  CHECK(json::parse(replay.out())["replayed"] == kDead);
  CHECK(count_where(f,
                    "SELECT count(*) FROM (SELECT 1 FROM sluice_attempts WHERE outcome = "
                    "'replayed' GROUP BY event_seq, consumer_id HAVING count(*) > 1)") == 0);
  CHECK(count_where(f, "SELECT count(*) FROM sluice_attempts WHERE outcome = 'replayed'") == kDead);
  worker.signal(SIGTERM);
  CHECK(worker.wait(seconds(30)) == 0);
}
