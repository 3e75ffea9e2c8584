#include <doctest/doctest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;

TEST_CASE("enqueue refuses to run without the caller's transaction") {
  Fixture f;
  CHECK_THROWS_AS(f.outbox.enqueue({.topic = "t"}), TransactionError);
  CHECK(count(f.db, "sluice_events") == 0);
}

TEST_CASE("rollback drops the event together with the domain write") {
  Fixture f;
  {
    SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
    f.db.exec("INSERT INTO applied (event_id, consumer) VALUES ('order-1', 'app')");
    f.outbox.enqueue({.topic = "order.placed", .payload = R"({"order":1})"});
  }  // destroyed without commit: rolled back
  CHECK(count(f.db, "applied") == 0);
  CHECK(count(f.db, "sluice_events") == 0);
  {
    SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
    f.db.exec("INSERT INTO applied (event_id, consumer) VALUES ('order-1', 'app')");
    f.outbox.enqueue({.topic = "order.placed", .payload = R"({"order":1})"});
    tx.commit();
  }
  CHECK(count(f.db, "applied") == 1);
  CHECK(count(f.db, "sluice_events") == 1);
}

TEST_CASE("after a failed insert the next enqueue succeeds, not failing again with the old error") {
  Fixture f;
  f.db.exec(
      "CREATE TRIGGER refuse_poison BEFORE INSERT ON sluice_events WHEN NEW.payload = '\"poison\"' "
      "BEGIN SELECT RAISE(ABORT, 'refused by the app'); END");
  CHECK_THROWS_WITH(f.outbox.enqueue_now({.topic = "t", .payload = "\"poison\""}),
                    doctest::Contains("refused by the app"));
  CHECK_FALSE(f.outbox.enqueue_now({.topic = "t", .payload = "\"fine\""}).duplicate());
  CHECK(count(f.db, "sluice_events") == 1);
}

TEST_CASE("a duplicate event ID writes nothing, names the original and keeps the transaction") {
  Fixture f;
  const EnqueueResult first = f.outbox.enqueue_now({.topic = "t", .id = "req-42"});
  CHECK_FALSE(first.duplicate());
  SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
  const EnqueueResult again = f.outbox.enqueue({.topic = "t", .payload = "[2]", .id = "req-42"});
  CHECK(again.status == EnqueueResult::Status::kDuplicateId);
  CHECK(again.id == "req-42");
  CHECK(again.seq == first.seq);
  f.db.exec("INSERT INTO applied (event_id, consumer) VALUES ('x', 'app')");
  tx.commit();
  CHECK(count(f.db, "sluice_events") == 1);
  CHECK(count(f.db, "applied") == 1);
}

TEST_CASE("a dedup key already used in the topic is a duplicate; in another topic it is not") {
  Fixture f;
  const auto paid = f.outbox.enqueue_now({.topic = "order.paid", .dedup_key = "order-42:paid"});
  const auto again = f.outbox.enqueue_now({.topic = "order.paid", .dedup_key = "order-42:paid"});
  CHECK(again.status == EnqueueResult::Status::kDuplicateDedupKey);
  CHECK(again.id == paid.id);
  const auto other = f.outbox.enqueue_now({.topic = "audit", .dedup_key = "order-42:paid"});
  CHECK_FALSE(other.duplicate());
  CHECK(count(f.db, "sluice_events") == 2);
}

TEST_CASE("bad input is refused with a clear error and nothing written") {
  Fixture f;
  Options small = f.options;
  small.max_payload_bytes = 16;
  Outbox limited(f.db, small);
  CHECK_THROWS_WITH_AS(f.outbox.enqueue_now({.topic = ""}), doctest::Contains("topic is empty"),
                       InvalidArgument);
  CHECK_THROWS_WITH_AS(f.outbox.enqueue_now({.topic = "t", .payload = "{\"a\":"}),
                       doctest::Contains("not valid JSON"), InvalidArgument);
  CHECK_THROWS_WITH_AS(limited.enqueue_now({.topic = "t", .payload = R"({"text":"far too long"})"}),
                       doctest::Contains("limit is 16"), InvalidArgument);
  CHECK_THROWS_AS(f.outbox.enqueue_now({.topic = "t", .key = std::string("a\nb")}),
                  InvalidArgument);
  CHECK(count(f.db, "sluice_events") == 0);
}

TEST_CASE("topics, keys, IDs and dedup keys refuse DEL and C1 controls too; other text is kept") {
  Fixture f;
  // ESC, DEL, CSI as UTF-8 (U+009B), U+0080, and a lone 0x9B byte (CSI in an 8-bit terminal).
  for (const std::string bad : {"a\x1b[2Jb", "a\x7f",
                                "a\xC2\x9B"
                                "2J",
                                "a\xC2\x80",
                                "a\x9B"
                                "2J"}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH_AS(f.outbox.enqueue_now({.topic = bad}),
                         doctest::Contains("the topic contains a control character"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(f.outbox.enqueue_now({.topic = "t", .key = bad}),
                         doctest::Contains("the ordering key contains a control character"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(f.outbox.enqueue_now({.topic = "t", .id = bad}),
                         doctest::Contains("the event ID contains a control character"),
                         InvalidArgument);
    CHECK_THROWS_WITH_AS(f.outbox.enqueue_now({.topic = "t", .dedup_key = bad}),
                         doctest::Contains("the dedup key contains a control character"),
                         InvalidArgument);
  }
  CHECK(count(f.db, "sluice_events") == 0);
  // U+00A0 (C2 A0) and U+2026 are text, as is every byte of a multi-byte character in 80..9F.
  for (const std::string good : {"caf\xC3\xA9",
                                 "a\xC2\xA0"
                                 "b",
                                 "\xE2\x80\xA6", "\xF0\x9F\x98\x80"}) {
    CAPTURE(good);
    CHECK_NOTHROW(f.outbox.enqueue_now({.topic = good, .key = good}));
  }
}

TEST_CASE("enqueue_batch validates every event before writing any") {
  Fixture f;
  SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
  CHECK_THROWS_AS(f.outbox.enqueue_batch({{.topic = "t"}, {.topic = "t", .payload = "nope"}}),
                  InvalidArgument);
  const auto results = f.outbox.enqueue_batch({{.topic = "a"}, {.topic = "b"}, {.topic = "c"}});
  tx.commit();
  REQUIRE(results.size() == 3);
  CHECK(results[0].seq < results[1].seq);
  CHECK(results[1].seq < results[2].seq);
  CHECK(count(f.db, "sluice_events") == 3);
}

TEST_CASE("headers, key, dedup key and not-before are stored as given") {
  Fixture f;
  const TimePoint later = f.clock->now() + std::chrono::minutes(5);
  const auto stored = f.outbox.enqueue_now({.topic = "t",
                                            .payload = R"({"x":1})",
                                            .headers = {{"trace", "abc"}},
                                            .key = "order-7",
                                            .dedup_key = "d-1",
                                            .not_before = later});
  const Event event = find_event(f.db, stored.id);
  CHECK(event.headers.at("trace") == "abc");
  CHECK(event.key == "order-7");
  CHECK(event.dedup_key == "d-1");
  CHECK(event.not_before == later);
  CHECK(event.created_at == f.clock->now());
  CHECK(event.payload == R"({"x":1})");
}

TEST_CASE("an event's version is stored as given, 1 when not given; under 1 is refused") {
  Fixture f;
  const auto plain = f.outbox.enqueue_now({.topic = "t"});
  const auto second = f.outbox.enqueue_now({.topic = "t", .version = 2});
  CHECK(find_event(f.db, plain.id).version == 1);
  CHECK(find_event(f.db, second.id).version == 2);
  for (const int bad : {0, -1}) {
    CAPTURE(bad);
    const std::string named = "version of a 't' event is " + std::to_string(bad);
    CHECK_THROWS_WITH_AS(f.outbox.enqueue_now({.topic = "t", .version = bad}),
                         doctest::Contains(named.c_str()), InvalidArgument);
  }
  CHECK(count(f.db, "sluice_events") == 2);
}

TEST_CASE("headers come back exactly, plain ASCII or needing JSON escapes") {
  Fixture f;
  const Headers plain = {
      {"content-type", "application/json"},
      {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}};
  const Headers escaped = {{"quote", "say \"hi\""},
                           {"back\\slash", "a\\b"},
                           {"line", "one\ntwo"},
                           {"utf8", "caf\xc3\xa9"},
                           {"plain", "x"}};
  for (const Headers& headers : {plain, escaped}) {
    const auto stored = f.outbox.enqueue_now({.topic = "t", .headers = headers});
    CHECK(find_event(f.db, stored.id).headers == headers);
  }
  SQLite::Statement raw(f.db, "SELECT headers FROM sluice_events ORDER BY seq LIMIT 1");
  REQUIRE(raw.executeStep());
  CHECK(
      raw.getColumn(0).getString() ==
      R"({"content-type":"application/json","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})");
}

TEST_CASE("receive stores the first arrival of an ID and acknowledges later ones as duplicates") {
  Fixture f;
  CHECK_THROWS_AS(f.outbox.receive({.topic = "t"}), InvalidArgument);
  const auto first = f.outbox.receive({.topic = "t", .id = "remote-1"});
  const auto second = f.outbox.receive({.topic = "t", .id = "remote-1"});
  CHECK_FALSE(first.duplicate());
  CHECK(second.status == EnqueueResult::Status::kDuplicateId);
  CHECK(count(f.db, "sluice_events") == 1);
}

// 40 events: a statement of 32 rows, one of 8. Duplicates of an older event, of an event earlier in
// the same statement and of one in the statement before, by ID and by dedup key.
std::vector<NewEvent> batch_with_duplicates() {
  std::vector<NewEvent> events;
  for (int i = 0; i < 40; ++i)
    events.push_back(
        {.topic = "t", .headers = {{"n", std::to_string(i)}}, .id = "b-" + std::to_string(i)});
  events[3].id = "old-1";
  events[10].id = "b-5";
  events[20].dedup_key = "op-1";
  events[25].dedup_key = "op-1";
  events[35].id = "b-2";
  return events;
}

void check_batch_with_duplicates(SQLite::Database& db, const EnqueueResult& old,
                                 const std::vector<EnqueueResult>& results) {
  using Status = EnqueueResult::Status;
  REQUIRE(results.size() == 40);
  CHECK(results[3].status == Status::kDuplicateId);
  CHECK(results[3].seq == old.seq);
  CHECK(results[10].status == Status::kDuplicateId);
  CHECK(results[10].seq == results[5].seq);
  CHECK(results[25].status == Status::kDuplicateDedupKey);
  CHECK(results[25].id == "b-20");
  CHECK(results[25].seq == results[20].seq);
  CHECK(results[35].status == Status::kDuplicateId);
  CHECK(results[35].seq == results[2].seq);
  std::int64_t previous = old.seq;
  for (int i : {3, 10, 25, 35}) CHECK(results[i].duplicate());
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].duplicate()) continue;
    CHECK(results[i].id == "b-" + std::to_string(i));
    CHECK(results[i].seq > previous);
    previous = results[i].seq;
    CHECK(find_event(db, results[i].id).seq == results[i].seq);
    CHECK(find_event(db, results[i].id).headers.at("n") == std::to_string(i));
  }
  CHECK(count(db, "sluice_events") == 1 + 40 - 4);
}

TEST_CASE("enqueue_batch stores and reports duplicates as one enqueue per event would") {
  Fixture f;
  const auto old = f.outbox.enqueue_now({.topic = "t", .id = "old-1"});
  SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
  const auto results = f.outbox.enqueue_batch(batch_with_duplicates());
  tx.commit();
  check_batch_with_duplicates(f.db, old, results);
}

TEST_CASE("receive_batch requires IDs, commits on its own and reports duplicates as receive") {
  Fixture f;
  CHECK_THROWS_AS(f.outbox.receive_batch({{.topic = "t", .id = "r-1"}, {.topic = "t"}}),
                  InvalidArgument);
  CHECK(count(f.db, "sluice_events") == 0);
  const auto old = f.outbox.receive({.topic = "t", .id = "old-1"});
  const auto results = f.outbox.receive_batch(batch_with_duplicates());
  check_batch_with_duplicates(f.db, old, results);
  const auto again = f.outbox.receive_batch(batch_with_duplicates());
  for (std::size_t i = 0; i < again.size(); ++i) {
    CHECK(again[i].duplicate());
    CHECK(again[i].seq == results[i].seq);
  }
  CHECK(count(f.db, "sluice_events") == 1 + 40 - 4);
}

TEST_CASE("receive_batch joins the caller's transaction") {
  Fixture f;
  {
    SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
    f.outbox.receive_batch({{.topic = "t", .id = "r-1"}, {.topic = "t", .id = "r-2"}});
  }
  CHECK(count(f.db, "sluice_events") == 0);
}

TEST_CASE("generated IDs are unique and increase in generation order") {
  const TimePoint t{std::chrono::milliseconds(1'700'000'000'000)};
  std::string previous;
  for (int i = 0; i < 10000; ++i) {
    const std::string id = generate_event_id(t);
    CHECK(id.size() == 26);
    CHECK(id > previous);
    previous = id;
  }
}

TEST_CASE("malformed JSON with an overflowing number is refused as bad input") {
  Fixture f;
  CHECK_THROWS_AS(f.outbox.enqueue_now({.topic = "t", .payload = "[1e999999, }"}), InvalidArgument);
  CHECK(count(f.db, "sluice_events") == 0);
}

TEST_CASE("enqueue_batch names the dedup key that refused a row whose ID a later row then took") {
  Fixture f;
  const EnqueueResult first =
      f.outbox.enqueue_now({.topic = "t", .payload = "{}", .dedup_key = "order-1:paid"});
  // Eight rows: what enqueue_batch writes with one statement.
  std::vector<NewEvent> batch = {
      {.topic = "t", .payload = "1", .id = "x", .dedup_key = "order-1:paid"},
      {.topic = "t", .payload = "2", .id = "x"}};
  batch.resize(8, NewEvent{.topic = "t", .payload = "3"});
  SQLite::Transaction tx(f.db, SQLite::TransactionBehavior::IMMEDIATE);
  const std::vector<EnqueueResult> results = f.outbox.enqueue_batch(batch);
  tx.commit();
  REQUIRE(results.size() == 8);
  CHECK(results[0].status == EnqueueResult::Status::kDuplicateDedupKey);
  CHECK(results[0].id == first.id);
  CHECK(results[1].status == EnqueueResult::Status::kStored);
  CHECK(results[1].id == "x");
  CHECK(find_event(f.db, "x").payload == "2");
}

namespace {

// Makes `db`'s calls wait for the write lock without a deadline, telling `waiting` once the first
// wait began: from then on the calling thread is known to be inside a call on the connection.
struct LockWait {
  explicit LockWait(SQLite::Database& db) {
    sqlite3_busy_handler(
        db.getHandle(),
        [](void* self, int) -> int {
          auto* wait = static_cast<LockWait*>(self);
          if (!wait->told.exchange(true)) wait->waiting.set_value();
          sqlite3_sleep(1);
          return 1;
        },
        this);
  }
  std::promise<void> waiting;
  std::atomic<bool> told{false};
};

// Runs `call` on a thread of its own and returns how it ended: "done", its error's text, or
// "still inside" if it had not returned 10 s later (then the thread is left to the caller to join).
std::string second_thread_call(std::thread& thread, const std::function<void()>& call) {
  auto ended = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = ended->get_future();
  thread = std::thread([call, ended] {
    try {
      call();
      ended->set_value("done");
    } catch (const std::exception& e) {
      ended->set_value(e.what());
    }
  });
  // A bound on a failing run only (a call that waits behind the first would never return before
  // the lock holder below lets go): a passing run returns at once.
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) return "still inside";
  return result.get();
}

}  // namespace

TEST_CASE("an Outbox call from a second thread while one runs is refused; the first goes on") {
  Fixture f(true);
  SQLite::Database holder(f.dir.file("app.db"), SQLite::OPEN_READWRITE);
  holder.exec("BEGIN IMMEDIATE");
  LockWait wait(f.db);
  std::thread first([&] { f.outbox.enqueue_now({.topic = "t", .id = "first"}); });
  wait.waiting.get_future().wait();

  std::thread second;
  const std::string ended =
      second_thread_call(second, [&] { f.outbox.enqueue_now({.topic = "t", .id = "second"}); });
  holder.exec("ROLLBACK");
  first.join();
  second.join();
  CHECK(ended.find("sluice: Outbox::enqueue_now: refused, another thread is inside") == 0);
  CHECK(count(f.db, "sluice_events") == 1);
  CHECK(count(f.db, "sluice_events", "id = 'first'") == 1);
}

TEST_CASE("enqueue() on a connection another thread is enqueueing on is refused") {
  Fixture f(true);
  // The first enqueue waits inside its INSERT, in a trigger's call of an app function, until told.
  struct Gate {
    std::promise<void> inside;
    std::promise<void> open;
    std::shared_future<void> opened{open.get_future().share()};
  } gate;
  sqlite3_create_function_v2(
      f.db.getHandle(), "wait_for_gate", 0, SQLITE_UTF8, &gate,
      [](sqlite3_context* ctx, int, sqlite3_value**) {
        auto* g = static_cast<Gate*>(sqlite3_user_data(ctx));
        g->inside.set_value();
        g->opened.wait();
        sqlite3_result_null(ctx);
      },
      nullptr, nullptr, nullptr);
  f.db.exec(
      "CREATE TEMP TRIGGER hold_first BEFORE INSERT ON sluice_events WHEN NEW.id = 'first' "
      "BEGIN SELECT wait_for_gate(); END");
  f.db.exec("BEGIN IMMEDIATE");
  std::thread first([&] { sluice::enqueue(f.db, {.topic = "t", .id = "first"}, f.options); });
  gate.inside.get_future().wait();

  std::thread second;
  const std::string ended = second_thread_call(
      second, [&] { sluice::enqueue(f.db, {.topic = "t", .id = "second"}, f.options); });
  gate.open.set_value();
  first.join();
  second.join();
  f.db.exec("COMMIT");
  CHECK(ended.find("sluice: enqueue: refused, another thread is inside") == 0);
  CHECK(count(f.db, "sluice_events") == 1);
  CHECK(count(f.db, "sluice_events", "id = 'first'") == 1);
}
