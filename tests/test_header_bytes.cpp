// Header bytes are never silently altered: a header name or value that is not valid UTF-8 is
// refused naming the header, at every way into the outbox, and everything else comes back to the
// handler byte for byte.
#include <doctest/doctest.h>

#include <functional>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::count;
using sluice::test::Fixture;

namespace {

// FF and FE never occur in UTF-8; "\xFF\xFE-abc" is what a Latin-1 or UTF-16 producer sends.
const std::string kNotUtf8 = "\xFF\xFE-abc";

struct EntryPoint {
  const char* name;
  std::function<void(Outbox&, SQLite::Database&, const NewEvent&)> store;
};

// Every way an event enters the outbox; the batch ones with a good event before the bad one.
std::vector<EntryPoint> entry_points() {
  const NewEvent good{.topic = "t", .id = "good"};
  return {
      {"enqueue",
       [](Outbox& outbox, SQLite::Database& db, const NewEvent& event) {
         SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
         outbox.enqueue(event);
         tx.commit();
       }},
      {"enqueue_now",
       [](Outbox& outbox, SQLite::Database&, const NewEvent& event) { outbox.enqueue_now(event); }},
      {"enqueue_batch",
       [good](Outbox& outbox, SQLite::Database& db, const NewEvent& event) {
         SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
         outbox.enqueue_batch({good, event});
         tx.commit();
       }},
      {"receive",
       [](Outbox& outbox, SQLite::Database&, const NewEvent& event) { outbox.receive(event); }},
      {"receive_batch",
       [good](Outbox& outbox, SQLite::Database&, const NewEvent& event) {
         outbox.receive_batch({good, event});
       }},
  };
}

// The headers the handler of a fresh consumer is handed for the one event in `f`.
Headers delivered_headers(Fixture& f) {
  Headers seen;
  Worker worker(f.db, f.options);
  worker.subscribe("reader", "t", [&](const Event& e, Context&) { seen = e.headers; },
                   {.start_from = StartFrom::kOldest});
  worker.run_until_idle();
  return seen;
}

}  // namespace

TEST_CASE("a header name or value that is not valid UTF-8 is refused naming it, writing nothing") {
  const std::vector<std::pair<Headers, std::string>> cases = {
      {{{"trace", kNotUtf8}}, "header 'trace'"},
      {{{kNotUtf8, "v"}}, "header name '\\xFF\\xFE-abc'"},
      {{{"overlong", "\xC0\xAF"}}, "header 'overlong'"},
      {{{"surrogate", "\xED\xA0\x80"}}, "header 'surrogate'"},
      {{{"past-U+10FFFF", "\xF4\x90\x80\x80"}}, "header 'past-U+10FFFF'"},
      {{{"cut-short", "caf\xC3"}}, "header 'cut-short'"},
  };
  for (const EntryPoint& entry : entry_points()) {
    for (const auto& [headers, named] : cases) {
      CAPTURE(entry.name);
      CAPTURE(named);
      Fixture f;
      const NewEvent bad{.topic = "t", .headers = headers, .id = "bad"};
      CHECK_THROWS_WITH_AS(entry.store(f.outbox, f.db, bad), doctest::Contains(named.c_str()),
                           InvalidArgument);
      CHECK_THROWS_WITH_AS(entry.store(f.outbox, f.db, bad), doctest::Contains("UTF-8"),
                           InvalidArgument);
      CHECK(count(f.db, "sluice_events") == 0);
    }
  }
}

TEST_CASE("two header names that differ only in bytes that are not UTF-8 are refused, not merged") {
  Fixture f;
  const NewEvent event{.topic = "t", .headers = {{"\xFF-a", "1"}, {"\xFE-a", "2"}}};
  CHECK_THROWS_AS(f.outbox.enqueue_now(event), InvalidArgument);
  CHECK(count(f.db, "sluice_events") == 0);
}

TEST_CASE("a NUL byte: refused in a header name, kept byte for byte in a value") {
  for (const EntryPoint& entry : entry_points()) {
    CAPTURE(entry.name);
    Fixture f;
    const NewEvent bad{.topic = "t", .headers = {{std::string("a\0b", 3), "v"}}, .id = "bad"};
    CHECK_THROWS_WITH_AS(entry.store(f.outbox, f.db, bad),
                         doctest::Contains("a header name contains a control character"),
                         InvalidArgument);
    CHECK(count(f.db, "sluice_events") == 0);
  }
  Fixture f;
  const Headers headers = {{"nul", std::string("a\0b\0", 4)}, {"control", "\x01\x1F\x7F"}};
  f.outbox.enqueue_now({.topic = "t", .headers = headers});
  CHECK(delivered_headers(f) == headers);
}

TEST_CASE("valid multi-byte UTF-8 in header names and values reaches the handler byte for byte") {
  const Headers headers = {{"caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC"},  // café: 日本
                           {"emoji", "\xF0\x9F\x98\x80"},                // U+1F600
                           {"edges", "\xC2\x80\xEF\xBF\xBF\xF4\x8F\xBF\xBF"},
                           {"ascii", "plain"}};
  for (const EntryPoint& entry : entry_points()) {
    CAPTURE(entry.name);
    Fixture f;
    entry.store(f.outbox, f.db, {.topic = "t", .headers = headers, .id = "multi-byte"});
    CHECK(find_event(f.db, "multi-byte").headers == headers);
  }
  Fixture f;
  f.outbox.enqueue_now({.topic = "t", .headers = headers});
  CHECK(delivered_headers(f) == headers);
}
