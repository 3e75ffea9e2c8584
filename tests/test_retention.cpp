#include <doctest/doctest.h>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;
using std::chrono::hours;

TEST_CASE("prune deletes finished history and keeps pending, retrying and dead work") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event& e, Context&) {
    if (e.payload == "\"retry\"") throw std::runtime_error("later");
    if (e.payload == "\"dead\"") throw PermanentError("never");
  });
  for (int i = 0; i < 10; ++i) f.publish("t");
  f.publish("t", "\"retry\"");
  f.publish("t", "\"dead\"");
  worker.run_until_idle();
  f.clock->advance(hours(48));
  f.publish("t");  // not delivered yet, and new
  const long long before = count(f.db, "sluice_events");
  CHECK(prune(f.db, hours(24), {.dry_run = true}, f.options) == 10);
  CHECK(count(f.db, "sluice_events") == before);
  long long last_progress = 0;
  CHECK(prune(f.db, hours(24),
              {.batch_size = 3, .progress = [&](long long n) { last_progress = n; }},
              f.options) == 10);
  CHECK(last_progress == 10);
  CHECK(count(f.db, "sluice_events") == 3);
  CHECK(count(f.db, "sluice_inbox") == 0);
  CHECK(count(f.db, "sluice_deliveries") == 2);
  const auto next = f.publish("t");
  CHECK(next.seq == before + 1);
}

TEST_CASE("prune refuses a retention under the dedup horizon unless forced") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) {});
  const Duration horizon = dedup_horizon(f.db, f.options);
  CHECK(horizon == f.options.retry.longest_span());
  CHECK_THROWS_WITH_AS(prune(f.db, std::chrono::milliseconds(1), {}, f.options),
                       doctest::Contains("dedup horizon"), InvalidArgument);
  CHECK(prune(f.db, std::chrono::milliseconds(1), {.force = true}, f.options) == 0);
}

TEST_CASE("prune never deletes events inside a claim or past a consumer's cursor") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) {});
  f.publish("t");
  f.publish("t");
  f.clock->advance(hours(48));
  CHECK(prune(f.db, hours(24), {}, f.options) == 0);
  worker.run_until_idle();
  CHECK(prune(f.db, hours(24), {}, f.options) == 2);
}

TEST_CASE("a consumer no longer run pins prune; prune names it; removing it lets prune delete") {
  Fixture f;
  Worker live(f.db, f.options);
  live.subscribe("live", "t", [](const Event&, Context&) {});
  {
    Worker gone(f.db, f.options);  // subscribed once, never run since
    gone.subscribe("gone", "t", [](const Event&, Context&) {});
  }
  for (int i = 0; i < 1000; ++i) f.publish("t");
  live.run_until_idle();
  f.clock->advance(hours(24 * 30));

  std::vector<RetentionHold> held_back;
  CHECK(prune(f.db, hours(24 * 7), {.held_back = &held_back}, f.options) == 0);
  REQUIRE(held_back.size() == 1);
  CHECK(held_back[0].consumer == "gone");
  CHECK(held_back[0].reason == HoldReason::kCursor);
  CHECK(held_back[0].events == 1000);
  CHECK(held_back[0].oldest == f.clock->now() - hours(24 * 30));
  CHECK(std::string(to_string(held_back[0].reason)) == "cursor");

  const ConsumerRemoval removed = remove_consumer(f.db, "gone", {}, f.options);
  CHECK(removed.removed);
  CHECK(removed.topics == std::vector<std::string>{"t"});
  CHECK(prune(f.db, hours(24 * 7), {.held_back = &held_back}, f.options) == 1000);
  CHECK(held_back.empty());
  CHECK(count(f.db, "sluice_events") == 0);
}

TEST_CASE("prune names dead letters, unfinished deliveries and claims that keep older events") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event& e, Context&) {
    if (e.payload == "\"retry\"") throw std::runtime_error("later");
    if (e.payload == "\"dead\"") throw PermanentError("never");
  });
  f.publish("t", "\"retry\"");
  f.publish("t", "\"dead\"");
  f.publish("t", "\"dead\"");
  worker.run_until_idle();
  f.db.exec(
      "INSERT INTO sluice_claims (consumer_id, owner, pid, from_seq, to_seq, lease_until, "
      "created_at) SELECT id, '1:gone:x', 1, 0, 3, 0, 0 FROM sluice_consumers");
  f.clock->advance(hours(48));
  const auto holds = retention_holds(f.db, hours(24), f.options);
  REQUIRE(holds.size() == 3);
  CHECK(holds[0].reason == HoldReason::kClaim);
  CHECK(holds[0].events == 3);
  CHECK(holds[1].reason == HoldReason::kDeadLetter);
  CHECK(holds[1].events == 2);
  CHECK(holds[2].reason == HoldReason::kUnfinished);
  CHECK(holds[2].events == 1);
  CHECK(retention_holds(f.db, hours(49), f.options).empty());
  // The claim alone: neither the dead letters nor the retry pin the file.
  const auto pinned = pinned_holds(f.db, hours(24), f.options);
  REQUIRE(pinned.size() == 1);
  CHECK(pinned[0].reason == HoldReason::kClaim);
  CHECK(pinned[0].events == 3);
}

TEST_CASE("a dry run counts exactly the events prune then deletes") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event& e, Context&) {
    if (e.payload == "\"retry\"") throw std::runtime_error("later");
    if (e.payload == "\"dead\"" || e.payload == "\"discard\"") throw PermanentError("never");
  });
  worker.subscribe("d", "u", [](const Event&, Context&) {});
  for (int i = 0; i < 7; ++i) f.publish("t");
  for (int i = 0; i < 4; ++i) f.publish("u");
  f.publish("t", "\"retry\"");
  f.publish("t", "\"dead\"");
  f.publish("t", "\"discard\"");
  f.publish("t", "\"discard\"");
  worker.run_until_idle();
  CHECK(discard_dead_letters(f.db, {.error_contains = "never"}, "test", f.options) == 3);
  f.clock->advance(hours(48));
  f.publish("t");  // new, not yet delivered
  f.publish("u");
  const long long counted = prune(f.db, hours(24), {.dry_run = true}, f.options);
  CHECK(counted == 7 + 4 + 3);  // the delivered, the discarded; not the retry nor the new ones
  CHECK(prune(f.db, hours(24), {}, f.options) == counted);
}
