#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fixture.hpp"

using namespace sluice;
using sluice::test::Fixture;

TEST_CASE("the JSON-lines sink writes one object per record at or above its level") {
  std::ostringstream out;
  JsonLinesSink sink(out, LogLevel::kInfo);
  sink.write(LogLevel::kDebug, "hidden", {});
  sink.write(LogLevel::kWarn, "retry scheduled",
             {{"event_id", "E1"}, {"attempt", 2}, {"lag_ms", -5LL}, {"order", "7"}});
  std::istringstream lines(out.str());
  std::string line;
  REQUIRE(std::getline(lines, line));
  const auto record = nlohmann::json::parse(line);
  CHECK(record["level"] == "warn");
  CHECK(record["msg"] == "retry scheduled");
  CHECK(record["event_id"] == "E1");
  // Numbers as JSON numbers; text that looks like a number stays text.
  CHECK(record["attempt"] == 2);
  CHECK(record["lag_ms"] == -5);
  CHECK(record["order"] == "7");
  CHECK(record["ts"].get<std::string>().back() == 'Z');
  CHECK_FALSE(std::getline(lines, line));
}

TEST_CASE("retries and dead letters are logged with event, consumer, topic, attempt and error") {
  Fixture f;
  std::ostringstream out;
  f.options.log = std::make_shared<JsonLinesSink>(out);
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) { throw std::runtime_error("boom"); });
  const auto stored = f.publish("t");
  for (int i = 0; i < 3; ++i) {
    worker.run_until_idle();
    f.clock->advance(std::chrono::seconds(10));
  }
  std::istringstream lines(out.str());
  std::string line;
  std::vector<nlohmann::json> records;
  while (std::getline(lines, line)) records.push_back(nlohmann::json::parse(line));
  REQUIRE(records.size() == 3);
  CHECK(records[0]["msg"] == "retry scheduled");
  CHECK(records[0]["event_id"] == stored.id);
  CHECK(records[0]["consumer"] == "c");
  CHECK(records[0]["topic"] == "t");
  CHECK(records[0]["attempt"] == 1);
  CHECK(records[0]["error"] == "boom");
  CHECK(records[0]["lag_ms"].is_number_integer());
  CHECK(records[2]["msg"] == "dead-lettered");
}

TEST_CASE("a replay is logged per dead letter with event, consumer and topic") {
  Fixture f;
  Worker worker(f.db, f.options);
  worker.subscribe("c", "t", [](const Event&, Context&) { throw PermanentError("bad"); });
  const auto stored = f.publish("t");
  worker.run_until_idle();
  std::ostringstream out;
  f.options.log = std::make_shared<JsonLinesSink>(out);
  CHECK(replay_dead_letters(f.db, {}, f.options) == 1);
  const auto record = nlohmann::json::parse(out.str());
  CHECK(record["msg"] == "dead letter replayed");
  CHECK(record["event_id"] == stored.id);
  CHECK(record["consumer"] == "c");
  CHECK(record["topic"] == "t");
  CHECK(record["error"] == "bad");
  CHECK(record["attempt"] == 1);
  CHECK(record["lag_ms"].is_number_integer());
}
