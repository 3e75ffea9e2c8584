// W3C trace context on events: given at enqueue (or by the app's hook), validated, kept through
// retries and replays, seen by handlers and told to the Tracer per attempt.
#include <doctest/doctest.h>

#include <mutex>

#include "recording_sink.hpp"
#include "support/fixture.hpp"
#include "trace_context.hpp"

using namespace sluice;
using sluice::test::Fixture;

namespace {

const std::string kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const std::string kOtherParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

// Thread-safe: records every call as text.
class RecordingTracer final : public Tracer {
 public:
  void attempt_started(const DeliveryAttempt& attempt) override {
    std::lock_guard lock(mutex_);
    open_.push_back(&attempt);
    calls_.push_back("start " + describe(attempt));
  }
  void attempt_ended(const DeliveryAttempt& attempt,
                     const std::vector<Outcome>& outcomes) override {
    std::lock_guard lock(mutex_);
    CHECK(!open_.empty());
    if (!open_.empty()) {
      CHECK(open_.back() == &attempt);  // the same object, on the same thread
      open_.pop_back();
    }
    CHECK(outcomes.size() == attempt.batch_size());
    std::string kinds;
    for (const Outcome& o : outcomes) kinds += o.kind == Outcome::Kind::kDone ? "done " : "failed ";
    calls_.push_back("end " + describe(attempt) + " " + kinds);
  }
  std::vector<std::string> calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  static std::string describe(const DeliveryAttempt& a) {
    std::string text = a.consumer + " " + a.topic + " #" + std::to_string(a.attempt) + " [";
    for (const std::string& parent : a.trace_contexts)
      text += (parent.empty() ? "-" : parent.substr(3, 4)) + ",";
    return text + "]";
  }
  std::mutex mutex_;
  std::vector<const DeliveryAttempt*> open_;
  std::vector<std::string> calls_;
};

std::string stored_headers_text(SQLite::Database& db, const std::string& id) {
  SQLite::Statement q(db, "SELECT coalesce(headers, '') FROM sluice_events WHERE id = ?");
  q.bind(1, id);
  REQUIRE(q.executeStep());
  return q.getColumn(0).getString();
}

long long events(SQLite::Database& db) {
  return db.execAndGet("SELECT count(*) FROM sluice_events").getInt64();
}

}  // namespace

TEST_CASE("a traceparent and a tracestate are checked as W3C Trace Context writes them") {
  CHECK(traceparent_problem(kParent).empty());
  CHECK(
      traceparent_problem("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later").empty());
  for (const std::string bad :
       {"", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",      // zero trace ID
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",      // zero parent ID
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",      // version ff
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",    // 00 with more
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g"}) {
    CAPTURE(bad);
    CHECK(!traceparent_problem(bad).empty());
  }
  CHECK(tracestate_problem("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE").empty());
  CHECK(tracestate_problem("tenant@vendor=x , ,other=y").empty());
  CHECK(tracestate_problem("a=1,a=2").find("twice") != std::string::npos);
  CHECK(tracestate_problem("Upper=1").find("key") != std::string::npos);
  CHECK(tracestate_problem("novalue").find("'='") != std::string::npos);
  CHECK(tracestate_problem("k=a,b").find("'='") != std::string::npos);
  std::string many;
  for (int i = 0; i < 33; ++i) many += "k" + std::to_string(i) + "=v,";
  CHECK(tracestate_problem(many).find("32") != std::string::npos);
  CHECK(tracestate_problem("k=" + std::string(600, 'v')).find("512") != std::string::npos);
  CHECK(trace_id_of(kParent) == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(trace_id_of("junk").empty());
}

TEST_CASE("an event's trace context is stored as its headers and handed to its handler") {
  Fixture f;
  const auto id = f.outbox
                      .enqueue_now({.topic = "t",
                                    .headers = {{"tenant", "7"}},
                                    .trace_context = kParent,
                                    .trace_state = "rojo=1"})
                      .id;
  CHECK(stored_headers_text(f.db, id) ==
        R"({"tenant":"7","traceparent":")" + kParent + R"(","tracestate":"rojo=1"})");
  // The same context through the header, as the C API, SQL and the relay give it.
  f.outbox.enqueue_now({.topic = "t", .headers = {{"traceparent", kOtherParent}}});
  f.outbox.enqueue_now({.topic = "t"});
  std::vector<std::optional<std::string>> seen;
  std::vector<std::optional<std::string>> states;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t",
                   [&](const Event& e, Context&) {
                     seen.push_back(e.trace_context());
                     states.push_back(e.trace_state());
                   },
                   {.start_from = StartFrom::kOldest});
  worker.run_until_idle();
  CHECK(seen == std::vector<std::optional<std::string>>{kParent, kOtherParent, std::nullopt});
  CHECK(states == std::vector<std::optional<std::string>>{"rojo=1", std::nullopt, std::nullopt});
}

TEST_CASE("a malformed or doubled trace context is refused and writes nothing") {
  Fixture f;
  const auto refused = [&](const NewEvent& event, const std::string& needle) {
    CAPTURE(needle);
    try {
      f.outbox.enqueue_now(event);
      FAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
    CHECK(events(f.db) == 0);
  };
  refused({.topic = "t", .trace_context = "00-abc"}, "trace_context '00-abc'");
  refused({.topic = "t", .headers = {{"traceparent", "nope"}}}, "the traceparent header 'nope'");
  refused({.topic = "t", .headers = {{"traceparent", kOtherParent}}, .trace_context = kParent},
          "differ");
  refused({.topic = "t", .trace_context = kParent, .trace_state = "a=1,a=2"}, "twice");
  refused({.topic = "t", .trace_state = "a=1"}, "needs a traceparent");
  refused({.topic = "t", .headers = {{"tracestate", "a=1"}}}, "needs a traceparent");
  // Given twice alike is no conflict.
  f.outbox.enqueue_now(
      {.topic = "t", .headers = {{"traceparent", kParent}}, .trace_context = kParent});
  CHECK(events(f.db) == 1);
}

TEST_CASE(
    "the app's hook gives the context an event lacks; a malformed answer is dropped, logged") {
  Fixture f;
  auto sink = std::make_shared<testing::RecordingSink>();
  Options options = f.options;
  options.log = sink;
  int asked = 0;
  std::optional<std::string> current = kParent;
  options.current_trace_context = [&] {
    ++asked;
    return current;
  };
  Outbox outbox(f.db, options);
  const auto from_hook = outbox.enqueue_now({.topic = "t"}).id;
  CHECK(asked == 1);
  const auto given = outbox.enqueue_now({.topic = "t", .trace_context = kOtherParent}).id;
  outbox.enqueue_now({.topic = "t", .headers = {{"traceparent", kOtherParent}}});
  CHECK(asked == 1);  // asked only when the event gives none
  current = "garbage";
  const auto dropped = outbox.enqueue_now({.topic = "t"}).id;
  CHECK(asked == 2);
  CHECK(sink->count(LogLevel::kWarn) == 1);
  CHECK(sink->field_contains("garbage"));
  current = std::nullopt;
  {
    SQLite::Transaction tx(f.db);
    outbox.enqueue_batch({{.topic = "t"}, {.topic = "t", .trace_context = kParent}});
    tx.commit();
  }
  CHECK(asked == 3);
  const auto parent_of = [&](const std::string& id) {
    return find_event(f.db, id).trace_context();
  };
  CHECK(parent_of(from_hook) == kParent);
  CHECK(parent_of(given) == kOtherParent);
  CHECK(parent_of(dropped) == std::nullopt);
}

TEST_CASE(
    "the tracer sees each attempt with its producers' contexts; retries and replays keep them") {
  Fixture f;
  auto tracer = std::make_shared<RecordingTracer>();
  Options options = f.options;
  options.tracer = tracer;
  options.retry.max_attempts = 2;
  options.retry.initial_backoff = std::chrono::seconds(1);
  f.outbox.enqueue_now({.topic = "t", .payload = R"("fail")", .trace_context = kParent});
  f.outbox.enqueue_now({.topic = "u", .trace_context = kOtherParent});
  f.outbox.enqueue_now({.topic = "u"});
  Worker worker(f.db, options);
  worker.subscribe("inside", "t",
                   [](const Event& e, Context&) {
                     if (e.payload == R"("fail")") throw std::runtime_error("no");
                   },
                   {.start_from = StartFrom::kOldest});
  worker.subscribe_batch(
      "batch", "u",
      [](const std::vector<Event>& batch) { return std::vector<Outcome>(batch.size()); },
      {.mode = DeliveryMode::kOutsideTransaction, .start_from = StartFrom::kOldest});
  worker.run_until_idle();
  f.clock->advance(std::chrono::minutes(1));
  worker.run_until_idle();  // the retry, then a dead letter
  CHECK(replay_dead_letters(f.db, {.consumer = "inside"}, f.options) == 1);
  worker.run_until_idle();
  const std::vector<std::string> expected = {
      "start inside t #1 [4bf9,]",  "end inside t #1 [4bf9,] failed ",
      "start batch u #1 [0af7,-,]", "end batch u #1 [0af7,-,] done done ",
      "start inside t #2 [4bf9,]",  "end inside t #2 [4bf9,] failed ",
      "start inside t #1 [4bf9,]",  "end inside t #1 [4bf9,] failed "};
  std::vector<std::string> calls = tracer->calls();
  // The batch consumer's call may come before or after the first in-transaction one.
  CHECK(calls.size() == expected.size());
  std::vector<std::string> sorted_calls = calls, sorted_expected = expected;
  std::sort(sorted_calls.begin(), sorted_calls.end());
  std::sort(sorted_expected.begin(), sorted_expected.end());
  CHECK(sorted_calls == sorted_expected);
}

TEST_CASE("a tracer that throws changes no delivery") {
  struct Throwing final : Tracer {
    void attempt_started(const DeliveryAttempt&) override { throw std::runtime_error("start"); }
    void attempt_ended(const DeliveryAttempt&, const std::vector<Outcome>&) override {
      throw std::runtime_error("end");
    }
  };
  Fixture f;
  Options options = f.options;
  options.tracer = std::make_shared<Throwing>();
  f.outbox.enqueue_now({.topic = "t", .trace_context = kParent});
  Worker worker(f.db, options);
  int calls = 0;
  worker.subscribe("c", "t", [&](const Event&, Context&) { ++calls; },
                   {.start_from = StartFrom::kOldest});
  CHECK(worker.run_until_idle().delivered == 1);
  CHECK(calls == 1);
}
