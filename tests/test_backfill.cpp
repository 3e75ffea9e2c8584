#include <doctest/doctest.h>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using std::chrono::minutes;

namespace {

struct BackfillSetup {
  explicit BackfillSetup(Fixture& fixture) : f(fixture), worker(f.db, f.options) {
    worker.subscribe("search", "doc",
                     [this](const Event& e, Context&) { seen.push_back(e.payload); });
    worker.subscribe("other", "doc", [](const Event&, Context&) {});
    for (int i = 1; i <= 5; ++i) {
      ids.push_back(f.publish("doc", std::to_string(i)).id);
      f.clock->advance(minutes(1));
    }
    worker.run_until_idle();
    seen.clear();
  }
  Fixture& f;
  Worker worker;
  std::vector<std::string> ids;
  std::vector<std::string> seen;
};

}  // namespace

TEST_CASE("backfill from an event ID re-delivers to one consumer, in order, once") {
  Fixture f;
  BackfillSetup setup(f);
  CHECK(count_backfill(f.db, "search", {.from_event_id = setup.ids[2]}) == 3);
  CHECK(backfill(f.db, "search", {.from_event_id = setup.ids[2]}, f.options) == 3);
  const DrainResult result = setup.worker.run_until_idle();
  CHECK(setup.seen == std::vector<std::string>{"3", "4", "5"});
  CHECK(result.delivered == 3);
  CHECK(setup.worker.run_until_idle().delivered == 0);
}

TEST_CASE("backfill by time range takes events created in [since, until)") {
  Fixture f;
  BackfillSetup setup(f);
  const TimePoint first = find_event(f.db, setup.ids[0]).created_at;
  CHECK(backfill(f.db, "search", {.since = first + minutes(1), .until = first + minutes(3)},
                 f.options) == 2);
  setup.worker.run_until_idle();
  CHECK(setup.seen == std::vector<std::string>{"2", "3"});
}

TEST_CASE("backfill refuses an unknown consumer, an unknown event or an ambiguous range") {
  Fixture f;
  BackfillSetup setup(f);
  CHECK_THROWS_AS(backfill(f.db, "nobody", {.from_event_id = setup.ids[0]}), NotFound);
  CHECK_THROWS_AS(backfill(f.db, "search", {.from_event_id = "no-such-id"}), NotFound);
  CHECK_THROWS_AS(backfill(f.db, "search", {}), InvalidArgument);
  CHECK(count(f.db, "sluice_deliveries") == 0);
}

TEST_CASE("a backfill of an event an outside handler is handling at that moment re-delivers it") {
  Fixture f(true);
  Worker worker(f.db, f.options);
  SQLite::Database operator_db = open_database(f.dir.file("app.db"), f.options);
  std::vector<std::string> handled;
  std::string first_id;
  worker.subscribe(
      "mailer", "mail",
      [&](const Event& e, Context&) {
        handled.push_back(e.id);
        // The operator backfills while this handler runs.
        if (handled.size() == 1) {
          CHECK(backfill(operator_db, "mailer", {.from_event_id = e.id}, f.options) == 1);
        }
      },
      {.mode = DeliveryMode::kOutsideTransaction});
  first_id = f.publish("mail").id;
  worker.run_until_idle();
  CHECK(handled == std::vector<std::string>{first_id, first_id});
  CHECK(count(f.db, "sluice_deliveries") == 0);
}
