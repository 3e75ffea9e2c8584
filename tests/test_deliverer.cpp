// The deliverer's outside-transaction path: a batch consumer's next batch runs while the last
// one commits, and its claim grows meanwhile.
#include <doctest/doctest.h>

#include "consumer_registry.hpp"
#include "deliverer.hpp"
#include "sluice/worker.hpp"
#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;

namespace {

// A batch consumer of topic "t" that notes the payload of every event handed to it.
struct BatchConsumer {
  explicit BatchConsumer(Fixture& f) {
    spec.name = "relay";
    spec.options.mode = DeliveryMode::kOutsideTransaction;
    spec.retry = f.options.retry;
    spec.id =
        record_subscription(f.db, spec.name, "t", RecordedOptions::of(spec.options, spec.retry),
                            spec.options.start_from, f.clock->now());
    spec.batch_handlers["t"] =
        std::make_shared<const BatchHandler>([this](const std::vector<Event>& events) {
          batches.push_back(events.size());
          for (const Event& e : events) handed.push_back(std::stoi(e.payload));
          return std::vector<Outcome>(events.size());
        });
  }
  ConsumerSpec spec;
  std::vector<std::size_t> batches;
  std::vector<int> handed;
};

Options with_batch_size(Options options, int batch_size) {
  options.batch_size = batch_size;
  return options;
}

// Ten events for the batch consumer, and its first claim taken: four of them, in batches of 2.
struct ClaimedBacklog {
  ClaimedBacklog() : options(with_batch_size(f.options, 4)), consumer(f), deliverer(f.db, options) {
    for (int i = 1; i <= 10; ++i) f.publish("t", std::to_string(i));
    deliverer.step(consumer.spec, in_hand, false);
  }
  StepResult step(bool stopping = false) {
    return deliverer.step(consumer.spec, in_hand, stopping);
  }

  Fixture f;
  Options options;
  BatchConsumer consumer;
  Deliverer deliverer;
  std::optional<Claim> in_hand;
};

}  // namespace

TEST_CASE("a batch consumer's claim grows while its next batch runs: one step takes a backlog") {
  ClaimedBacklog b;
  REQUIRE(b.in_hand);
  CHECK(b.in_hand->items.size() == 4);
  CHECK(b.step().delivered == 10);
  CHECK_FALSE(b.in_hand);
  CHECK(b.consumer.batches == std::vector<std::size_t>{2, 2, 2, 2, 2});
  CHECK(b.consumer.handed == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(count(b.f.db, "sluice_inbox") == 10);
  CHECK(count(b.f.db, "sluice_claims") == 0);
}

TEST_CASE("a stopping worker's claim does not grow") {
  ClaimedBacklog b;
  CHECK(b.step(true).delivered == 4);
  CHECK_FALSE(b.in_hand);
  CHECK(b.f.db.execAndGet("SELECT cursor FROM sluice_consumers").getInt64() == 4);
}

TEST_CASE("a failed commit leaves the claim as before it, growth included; the next step redoes") {
  ClaimedBacklog b;
  const std::string third =
      b.f.db.execAndGet("SELECT id FROM sluice_events WHERE seq = 3").getString();
  b.f.db.exec("CREATE TRIGGER refuse_third BEFORE INSERT ON sluice_inbox WHEN NEW.event_id = '" +
              third + "' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
  CHECK_THROWS(b.step());
  REQUIRE(b.in_hand);
  CHECK(b.in_hand->next == 2);
  CHECK(b.in_hand->items.size() == 6);  // the growth committed with the first batch, no more
  // The events handed to the failed batch and to the one ahead of it are back in the claim.
  for (std::size_t i = 0; i < b.in_hand->items.size(); ++i)
    CHECK(b.in_hand->items[i].event.payload == std::to_string(i + 1));
  CHECK(count(b.f.db, "sluice_inbox") == 2);
  b.f.db.exec("DROP TRIGGER refuse_third");
  b.consumer.handed.clear();
  CHECK(b.step().delivered == 8);
  // Events 3 and 4 again, and the batch that ran ahead of the failed commit (at least once).
  CHECK(b.consumer.handed == std::vector<int>{3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(count(b.f.db, "sluice_inbox") == 10);
  CHECK(count(b.f.db, "sluice_claims") == 0);
}

TEST_CASE("a gap in seq behind the cursor is crossed in one step, not one scan window a step") {
  // A cursor far behind the oldest event (a file edited by hand, or everything before it pruned)
  // once cost a claim and a commit per 16k seqs of the gap: a cursor set to -3e18 kept a worker
  // committing for ever.
  Fixture f;
  Worker worker(f.db, f.options);
  int calls = 0;
  worker.subscribe("billing", "t", [&](const Event&, Context&) { ++calls; });
  worker.run_until_idle();
  f.db.exec("UPDATE sluice_consumers SET cursor = -655360 WHERE name = 'billing'");
  const auto claims_made = [&] {
    return f.db.execAndGet("SELECT value FROM sluice_meta WHERE name = 'claim_ids'").getInt64();
  };
  const long long before = claims_made();
  f.publish("t");
  f.publish("t");
  worker.run_until_idle();
  CHECK(calls == 2);
  CHECK(claims_made() - before <= 2);
}
