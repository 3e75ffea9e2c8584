// Operators find and remove a consumer that is no longer run and holds back prune, and see events
// that wait for a handler no running worker has.
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;
using std::chrono::hours;

namespace {

// Options whose clock stands `ago` in the past, to make history that old.
sluice::Options back_then(const CliFixture& f, sluice::Duration ago) {
  sluice::Options options = f.options();
  options.clock = std::make_shared<sluice::ManualClock>(sluice::system_clock()->now() - ago);
  return options;
}

// 30 days ago: consumers "live" and "gone" subscribed to order.placed and 1,000 events enqueued;
// "live" delivered them, "gone" never ran again.
void abandoned_consumer(const CliFixture& f) {
  const sluice::Options options = back_then(f, hours(24 * 30));
  sluice::Worker live(f.db_path, options);
  live.subscribe("live", "order.placed", [](const sluice::Event&, sluice::Context&) {});
  {
    sluice::Worker gone(f.db_path, options);
    gone.subscribe("gone", "order.placed", [](const sluice::Event&, sluice::Context&) {});
  }
  SQLite::Database db = sluice::open_database(f.db_path, options);
  sluice::Outbox outbox(db, options);
  std::vector<sluice::NewEvent> events(1000, sluice::NewEvent{.topic = "order.placed"});
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  outbox.enqueue_batch(events);
  tx.commit();
  live.run_until_idle();
}

}  // namespace

TEST_CASE("a consumer no longer run: check warns, prune names it, consumer remove frees prune") {
  CliFixture f;
  f.init();
  abandoned_consumer(f);

  const auto check = f.sluice({"check"});
  CHECK(check.exit_code == 1);
  CHECK(check.out.find("retention       warning  consumer gone keeps 1000 event(s), the oldest "
                       "30d old, past its cursor") != std::string::npos);
  const auto checks = json::parse(f.sluice({"check", "--json"}).out)["checks"];
  bool warned = false;
  for (const auto& c : checks) warned |= c["name"] == "retention" && c["status"] == "warning";
  CHECK(warned);

  const auto kept = f.json({"prune", "--older-than", "7d"});
  CHECK(kept["pruned"] == 0);
  REQUIRE(kept["held_back"].size() == 1);
  CHECK(kept["held_back"][0]["consumer"] == "gone");
  CHECK(kept["held_back"][0]["reason"] == "cursor");
  CHECK(kept["held_back"][0]["events"] == 1000);
  const auto kept_text = f.sluice({"prune", "--older-than", "7d", "--dry-run"});
  CHECK(kept_text.out.find("kept: consumer gone keeps 1000 event(s)") != std::string::npos);
  CHECK(kept_text.out.find("sluice consumer remove gone") != std::string::npos);

  const std::string before = file_bytes(f.db_path);
  const auto dry = f.sluice({"consumer", "remove", "gone", "--dry-run"});
  CHECK(dry.exit_code == 0);
  CHECK(dry.out.find("would remove consumer gone") != std::string::npos);
  CHECK(dry.out.find("topics       order.placed") != std::string::npos);
  CHECK(file_bytes(f.db_path) == before);

  const auto removed = f.json({"consumer", "remove", "gone"});
  CHECK(removed["removed"] == true);
  CHECK(removed["consumer"] == "gone");
  CHECK(f.json({"prune", "--older-than", "7d"})["pruned"] == 1000);
  CHECK(f.sluice({"check"}).exit_code == 0);
  CHECK(f.sluice({"consumer", "remove", "gone"}).exit_code == 1);
}

TEST_CASE("consumer remove refuses a consumer with a live worker unless --force") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.enqueue_order(2, true);
  f.deliver();  // "billing" worked just now
  const std::string before = file_bytes(f.db_path);
  const auto refused = f.sluice({"consumer", "remove", "billing"});
  CHECK(refused.exit_code == 2);
  CHECK(one_line(refused.err));
  CHECK(refused.err.find("'billing' looks alive") != std::string::npos);
  CHECK(refused.err.find("--force") != std::string::npos);
  CHECK(refused.err.rfind("sluice: remove consumer: ", 0) == 0);
  CHECK(refused.err.find("less than 1h ago") != std::string::npos);
  // A preview is never refused: it says what it found and that the removal would be refused.
  const auto preview = f.sluice({"consumer", "remove", "billing", "--dry-run"});
  CHECK(preview.exit_code == 0);
  CHECK(preview.out.find("would remove consumer billing") == std::string::npos);
  CHECK(preview.out.find("would refuse: a worker of 'billing' looks alive (it was active at ") !=
        std::string::npos);
  CHECK(preview.out.find("less than 1h ago); stop its workers first, or --force") !=
        std::string::npos);
  CHECK(
      f.json({"consumer", "remove", "billing", "--dry-run"})["live_worker"].get<std::string>().find(
          "less than 1h ago") != std::string::npos);
  CHECK(file_bytes(f.db_path) == before);

  const auto forced = f.json({"consumer", "remove", "billing", "--force"});
  CHECK(forced["removed"] == true);
  CHECK(forced["inbox"] == 1);
  CHECK(forced["dead_letters"] == 1);
  CHECK(f.json({"stats"})["consumers"].empty());
  CHECK(f.json({"dlq", "list"})["dead_letters"].empty());
  CHECK(f.sluice({"consumer"}).exit_code == 2);
  // The removal, dead letter and all, is on record; the refused attempts and the dry run not.
  const auto entries = f.json({"audit"})["entries"];
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["action"] == "remove");
  CHECK(entries[0]["source"] == "cli");
  CHECK(entries[0]["count"] == 1);  // the dead letter's delivery row
  CHECK(entries[0]["filter"] == nlohmann::json{{"consumer", "billing"}, {"force", true}});
}

TEST_CASE("stats counts events waiting for a handler; check warns once they wait 15 minutes") {
  CliFixture f;
  f.init();
  {
    // A build with a handler for report.due ran once; the build running now has none for it and
    // leaves its events, one an hour old, for one that has (issue 20).
    sluice::Worker(f.db_path, f.options())
        .subscribe("reports", "report.due", [](const sluice::Event&, sluice::Context&) {});
    sluice::Worker running(f.db_path, f.options());
    running.subscribe("reports", "report.sent", [](const sluice::Event&, sluice::Context&) {});
    const sluice::Options hour_ago = back_then(f, hours(1));
    SQLite::Database db = sluice::open_database(f.db_path, hour_ago);
    sluice::Outbox(db, hour_ago).enqueue_now({.topic = "report.due"});
    // The connection keeps the clock it was opened with: this event is stamped now by naming
    // the system clock.
    sluice::Options now = f.options();
    now.clock = sluice::system_clock();
    sluice::Outbox(db, now).enqueue_now({.topic = "report.due"});
    running.run_until_idle();
  }
  const auto stats = f.json({"stats"})["consumers"][0];
  CHECK(stats["waiting_for_handler"] == 2);
  CHECK(stats["pending"] == 2);
  const auto table = f.sluice({"stats"});
  CHECK(table.out.find("NO HANDLER") != std::string::npos);

  const std::string before = file_bytes(f.db_path);
  const auto check = f.sluice({"check"});
  CHECK(check.exit_code == 1);
  CHECK(check.out.find("1 event(s) of consumer reports (topic report.due) wait for a handler no "
                       "running worker has registered, the oldest 1h old") != std::string::npos);
  CHECK(file_bytes(f.db_path) == before);
}
