// `sluice workers` and the consumer checks of `sluice check` (stuck, lag, claim_age) against
// worker processes: a worker is alive from its start (an idle one too), dead once killed, gone
// once stopped; a consumer with due work and no live worker is stuck. Both commands only read.
#include <SQLiteCpp/Database.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

long long now_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Makes the file's events `age` older, as if they had waited that long.
void age_events(const CliFixture& f, std::chrono::milliseconds age) {
  SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
  SQLite::Statement update(db, "UPDATE sluice_events SET created_at = created_at - ?");
  update.bind(1, static_cast<int64_t>(age.count()));
  update.exec();
}

// The file and its write-ahead log, where commits land first.
std::string file_and_log(const CliFixture& f) {
  const std::string wal = f.db_path + "-wal";
  return file_bytes(f.db_path) + (std::filesystem::exists(wal) ? file_bytes(wal) : "");
}

json check_named(const json& report, const std::string& name) {
  for (const json& check : report["checks"]) {
    if (check["name"] == name) return check;
  }
  FAIL("no check named " << name << " in " << report.dump());
  return {};
}

json consumer_named(const json& stats, const std::string& name) {
  for (const json& consumer : stats["consumers"]) {
    if (consumer["consumer"] == name) return consumer;
  }
  FAIL("no consumer named " << name << " in " << stats.dump());
  return {};
}

}  // namespace

TEST_CASE("a stuck consumer: 3 due events, lag 2h, no live worker; check warns and exits 1") {
  CliFixture f;
  f.init();
  f.deliver();  // records consumer billing; nothing to deliver yet
  for (int order = 1; order <= 3; ++order) f.enqueue_order(order);
  age_events(f, std::chrono::hours(2));
  const std::string before = file_and_log(f);

  const auto checked = f.sluice({"check", "--json"});
  CHECK(checked.exit_code == 1);
  const json report = json::parse(checked.out);
  CHECK(check_named(report, "stuck")["status"] == "warning");
  CHECK(check_named(report, "stuck")["detail"].get<std::string>().find(
            "consumer billing: 3 event(s) due and no live worker") != std::string::npos);
  CHECK(check_named(report, "lag")["status"] == "warning");
  CHECK(check_named(report, "lag")["detail"] == "consumer billing: lag 2h, over --max-lag 5m");
  CHECK(check_named(report, "claim_age")["status"] == "ok");

  // --max-lag moves the line; the stuck consumer stays stuck.
  const json relaxed = json::parse(f.sluice({"check", "--json", "--max-lag", "3h"}).out);
  CHECK(check_named(relaxed, "lag")["status"] == "ok");
  CHECK(check_named(relaxed, "stuck")["status"] == "warning");

  const json stats = f.json({"stats"});
  CHECK(consumer_named(stats, "billing")["due"] == 3);
  CHECK(consumer_named(stats, "billing")["live_workers"] == 0);
  CHECK(f.sluice({"stats"}).out.find("none running") != std::string::npos);
  CHECK(f.json({"workers"})["workers"].empty());

  // Read-only: the file is unchanged and no lock file was made beside it.
  CHECK(file_and_log(f) == before);
  CHECK_FALSE(std::filesystem::exists(f.db_path + "-sluice-lock"));
}

TEST_CASE("bad limits are refused naming the option") {
  CliFixture f;
  f.init();
  const auto result = f.sluice({"check", "--max-lag", "soon"});
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("invalid --max-lag") != std::string::npos);
}

TEST_CASE("a worker is alive from its start, idle; killed, it is dead and its consumer stuck") {
  CliFixture f;
  f.init();
  ChildProcess worker({required_env("SLUICE_TEST_WORKER"), f.db_path, "100"});
  REQUIRE(worker.wait_for_output(ChildProcess::Stream::kOut, "ready", seconds(30)));

  // Registered at start: seen before it ever claimed (nothing was enqueued). The registration
  // commits on the worker's thread just after "ready"; the CLI is asked until it shows.
  json workers;
  for (int i = 0; i < 300; ++i) {
    workers = f.json({"workers"})["workers"];
    if (!workers.empty()) break;
    std::this_thread::sleep_for(milliseconds(10));  // a poll interval, not a synchronisation
  }
  REQUIRE(workers.size() == 1);
  CHECK(workers[0]["pid"] == worker.pid());
  CHECK(workers[0]["kind"] == "worker");
  CHECK(workers[0]["consumers"] == json::array({"billing"}));
  CHECK(workers[0]["liveness"] == "alive");
  CHECK(workers[0]["claims"].empty());
  CHECK(f.sluice({"workers"}).out.find("alive") != std::string::npos);
  const json live_stats = f.json({"stats"});
  CHECK(consumer_named(live_stats, "billing")["live_workers"] == 1);

  // An idle worker writes nothing: the file stays as it is while it waits.
  const std::string idle = file_and_log(f);
  CHECK(f.sluice({"check"}).exit_code == 0);
  CHECK(file_and_log(f) == idle);

  worker.signal(SIGKILL);
  REQUIRE(worker.wait(seconds(10)).has_value());
  f.enqueue_order(1);
  const json dead = f.json({"workers"})["workers"];
  REQUIRE(dead.size() == 1);
  CHECK(dead[0]["liveness"] == "dead");
  const json report = json::parse(f.sluice({"check", "--json"}).out);
  const std::string stuck = check_named(report, "stuck")["detail"];
  CHECK(stuck.find("consumer billing: 1 event(s) due and no live worker (a worker of it was last "
                   "known alive") != std::string::npos);
  CHECK_FALSE(consumer_named(f.json({"stats"}), "billing")["last_seen_worker_at"].is_null());
}

TEST_CASE("a worker stopped cleanly leaves the list") {
  CliFixture f;
  f.init();
  ChildProcess worker({required_env("SLUICE_TEST_WORKER"), f.db_path, "100"});
  REQUIRE(worker.wait_for_output(ChildProcess::Stream::kOut, "ready", seconds(30)));
  f.enqueue_order(1);
  worker.signal(SIGTERM);
  REQUIRE(worker.wait(seconds(30)) == 0);
  CHECK(f.json({"workers"})["workers"].empty());
}

TEST_CASE("check --max-claim-age warns about a batch held too long, naming its process") {
  CliFixture f;
  f.init();
  f.deliver();
  {
    // A claim as a worker whose handler hangs leaves it: taken 20 minutes ago, lease still on.
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    SQLite::Statement insert(
        db,
        "INSERT INTO sluice_claims (id, consumer_id, owner, pid, from_seq, to_seq, lease_until, "
        "created_at) SELECT 999, id, '4242:1:1', 4242, 0, 0, ?1, ?2 FROM sluice_consumers "
        "WHERE name = 'billing'");
    insert.bind(1, static_cast<int64_t>(now_ms() + 3'600'000));
    insert.bind(2, static_cast<int64_t>(now_ms() - 1'200'000));
    REQUIRE(insert.exec() == 1);
  }
  const json report = json::parse(f.sluice({"check", "--json"}).out);
  const std::string detail = check_named(report, "claim_age")["detail"];
  CHECK(detail.find("consumer billing: claim 999 of pid 4242") != std::string::npos);
  CHECK(detail.find("over --max-claim-age 10m") != std::string::npos);
  const json relaxed = json::parse(f.sluice({"check", "--json", "--max-claim-age", "1h"}).out);
  CHECK(check_named(relaxed, "claim_age")["status"] == "ok");
}
