// Bad input to the `sluice` command: a clear one-line message on stderr, the documented exit
// code, and nothing changed.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;

TEST_CASE("malformed JSON is refused with exit 2 and stores nothing") {
  CliFixture f;
  f.init();
  for (const char* payload : {"{\"order\":", "not json", ""}) {
    CAPTURE(payload);
    const auto result = f.sluice({"enqueue", "--topic", "t", "--payload", payload});
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("not valid JSON") != std::string::npos);
    CHECK(one_line(result.err));
  }
  const auto from_file = f.sluice({"enqueue", "--topic", "t", "--payload-file", "-"}, {}, "{]");
  CHECK(from_file.exit_code == 2);
  const auto no_file =
      f.sluice({"enqueue", "--topic", "t", "--payload-file", f.dir.file("missing.json")});
  CHECK(no_file.exit_code == 2);
  CHECK(no_file.err.find("cannot read payload file") != std::string::npos);
  CHECK(f.json({"events"})["events"].empty());
}

TEST_CASE("an unknown event ID: exit 1 naming it, nothing changed") {
  CliFixture f;
  f.init();
  f.enqueue_order(1, true);
  f.deliver();
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"show", "no-such-event"},
        {"dlq", "show", "no-such-event"},
        {"dlq", "replay", "no-such-event"},
        {"dlq", "discard", "no-such-event", "--note", "x"},
        {"replay", "--consumer", "billing", "--from-event", "no-such-event"},
        {"export", "--event", "no-such-event", "-o", f.dir.file("incident.db")}}) {
    CAPTURE(command[0]);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 1);
    CHECK(result.err.find("no-such-event") != std::string::npos);
    CHECK(one_line(result.err));
  }
  CHECK_FALSE(std::filesystem::exists(f.dir.file("incident.db")));
  CHECK(f.json({"dlq", "list"})["dead_letters"].size() == 1);
}

TEST_CASE("an event without a dead letter cannot be replayed or discarded: exit 1") {
  CliFixture f;
  f.init();
  const std::string bad = f.enqueue_order(1, true);
  const std::string good = f.enqueue_order(2);
  f.deliver();
  const auto result = f.sluice({"dlq", "replay", bad, good});
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("no dead letter for event " + good) != std::string::npos);
  CHECK(f.json({"dlq", "list"})["dead_letters"].size() == 1);
  CHECK(f.sluice({"dlq", "show", good}).exit_code == 1);
}

TEST_CASE("an unknown consumer: exit 1 naming it") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.deliver();
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"events", "--consumer", "nobody"},
        {"dlq", "list", "--consumer", "nobody"},
        {"dlq", "replay", "--all", "--consumer", "nobody"},
        {"replay", "--consumer", "nobody", "--since", "1h"}}) {
    CAPTURE(command[0]);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 1);
    CHECK(result.err.find("nobody") != std::string::npos);
  }
}

TEST_CASE("bad durations, times and flags: exit 2 with a message naming them") {
  CliFixture f;
  f.init();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"prune", "--older-than", "7x"}, "invalid duration '7x'"},
      {{"prune", "--older-than", "-1d"}, "invalid duration '-1d'"},
      {{"enqueue", "--topic", "t", "--payload", "{}", "--delay", "5"}, "invalid duration '5'"},
      {{"events", "--since", "yesterday"}, "invalid time 'yesterday'"},
      {{"dlq", "list", "--since", "2026-13-01T00:00:00Z"}, "invalid time"},
      {{"stats", "--watch", "soon"}, "invalid duration 'soon'"},
      {{"events", "--state", "dead"}, "--state needs --consumer"},
      {{"events", "--consumer", "billing", "--state", "asleep"}, "unknown state"},
      {{"dlq", "replay"}, "EVENT_ID... or --all"},
      {{"dlq", "replay", "x", "--all"}, "EVENT_ID... or --all"},
      {{"dlq", "discard", "--all"}, "--note"},
      {{"dlq", "discard", "--all", "--note", " "}, "non-empty --note"},
      {{"enqueue", "--topic", "t", "--payload", "{}", "--header", "novalue"}, "NAME=VALUE"},
      {{"replay", "--consumer", "billing"}, "--since"},
      {{"metrics", "--listen", "localhost"}, "HOST:PORT"},
      {{"frobnicate"}, "frobnicate"},
      {{}, "no command given"},
      {{"dlq"}, "dlq needs a subcommand"},
      {{"stats", "--no-such-flag"}, "--no-such-flag"},
  };
  for (const auto& [command, message] : cases) {
    CAPTURE(message);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find(message) != std::string::npos);
    CHECK(one_line(result.err));
  }
  CHECK(f.json({"events"})["events"].empty());
}

TEST_CASE("the CLI refuses a duration whose parts sum past the limit") {
  CliFixture f;
  f.init();
  // Each part is within bounds; their sum is past what a time can hold.
  std::string sum_past_limit;
  for (int i = 0; i < 120; ++i) sum_past_limit += "999999999d";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"enqueue", "--topic", "t", "--payload", "{}", "--delay",
                                 sum_past_limit},
        {"prune", "--older-than", sum_past_limit, "--force"},
        {"events", "--since", sum_past_limit},
        {"stats", "--watch", sum_past_limit}}) {
    CAPTURE(command[0]);
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("invalid duration") != std::string::npos);
    CHECK(result.err.find("at most 36500d") != std::string::npos);
    CHECK(one_line(result.err));
  }
  CHECK(f.json({"events"})["events"].empty());
}

TEST_CASE("enqueue refuses a header that is not UTF-8 or given twice: exit 2 naming it") {
  CliFixture f;
  f.init();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--header", "trace=\xFF\xFE-abc"}, "header 'trace'"},
      {{"--header", "\xFF\xFE-abc=v"}, "header name '\\xFF\\xFE-abc'"},
      {{"--header", "\xFF-a=1", "--header", "\xFE-a=2"}, "not valid UTF-8"},
      {{"--header", "trace=1", "--header", "trace=2"}, "header 'trace' given twice"},
  };
  for (const auto& [headers, message] : cases) {
    CAPTURE(message);
    std::vector<std::string> command = {"enqueue", "--topic", "t", "--payload", "{}"};
    command.insert(command.end(), headers.begin(), headers.end());
    const auto result = f.sluice(command);
    CHECK(result.exit_code == 2);
    CHECK(result.err.find(message) != std::string::npos);
    CHECK(one_line(result.err));
  }
  CHECK(f.json({"events"})["events"].empty());
}

TEST_CASE("export refuses to overwrite an existing file without --force") {
  CliFixture f;
  f.init();
  const std::string id = f.enqueue_order(1);
  const std::string out = f.dir.file("incident.db");
  { std::ofstream(out) << "keep me"; }
  const auto result = f.sluice({"export", "--event", id, "-o", out});
  CHECK(result.exit_code == 2);
  CHECK(file_bytes(out) == "keep me");
  CHECK(f.sluice({"export", "--event", id, "-o", out, "--force"}).exit_code == 0);
}
