// The `sluice` command run as a process against temp files: output, JSON and exit codes.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>

#include "format.hpp"
#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;
using sluice::cli::parse_time;
using std::chrono::seconds;

TEST_CASE("init creates a file only when asked and reports it") {
  CliFixture f;
  const auto created = f.json({"init"});
  CHECK(created["created"] == true);
  CHECK(created["schema_version"] == sluice::schema_version());
  CHECK(created["path"] == f.db_path);
  const auto again = f.sluice({"init"});
  CHECK(again.exit_code == 0);
  CHECK(again.out.rfind("ready: " + f.db_path, 0) == 0);
  CHECK(f.json({"init"})["created"] == false);
}

TEST_CASE("SLUICE_DB stands in for --db") {
  CliFixture f;
  f.init();
  const auto result = CliFixture::sluice_bare({"stats", "--json"}, {{"SLUICE_DB", f.db_path}});
  CHECK(result.exit_code == 0);
  CHECK(json::parse(result.out)["consumers"].is_array());
}

TEST_CASE("--help lists commands and exit codes; each command's help has an example") {
  const auto top = CliFixture::sluice_bare({"--help"});
  CHECK(top.exit_code == 0);
  for (const char* command : {"init", "stats", "events", "show", "tail", "enqueue", "dlq", "replay",
                              "consumer", "prune", "check", "export", "metrics", "workers"}) {
    CAPTURE(command);
    CHECK(top.out.find(std::string("  ") + command) != std::string::npos);
    const auto help = CliFixture::sluice_bare({command, "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("Example:") != std::string::npos);
  }
  CHECK(top.out.find("Exit codes: 0 ok; 1 not found") != std::string::npos);
  CHECK(CliFixture::sluice_bare({"dlq", "replay", "--help"}).out.find("Example:") !=
        std::string::npos);
}

TEST_CASE("enqueue keeps multi-byte UTF-8 header names and values byte for byte") {
  CliFixture f;
  f.init();
  const std::string name = "caf\xC3\xA9";
  const std::string value = "\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80";
  REQUIRE(f.sluice({"enqueue", "--topic", "t", "--payload", "{}", "--header", name + "=" + value})
              .exit_code == 0);
  const auto events = f.json({"events"})["events"];
  REQUIRE(events.size() == 1);
  CHECK(events[0]["headers"][name] == value);
}

TEST_CASE("enqueue prints the ID, reports duplicates, and takes files, keys, headers, delays") {
  CliFixture f;
  f.init();
  const auto stored = f.sluice({"enqueue", "--topic", "order.placed", "--payload", "{\"order\":1}",
                                "--id", "order-1", "--key", "k1", "--header", "trace=abc"});
  CHECK(stored.exit_code == 0);
  CHECK(stored.out == "order-1\n");
  const auto duplicate =
      f.sluice({"enqueue", "--topic", "order.placed", "--payload", "{}", "--id", "order-1"});
  CHECK(duplicate.exit_code == 0);
  CHECK(duplicate.out == "duplicate of order-1\n");

  const auto first = f.json(
      {"enqueue", "--topic", "order.paid", "--payload", "{}", "--dedup-key", "order-1:paid"});
  CHECK(first["status"] == "stored");
  const auto second = f.json(
      {"enqueue", "--topic", "order.paid", "--payload", "{}", "--dedup-key", "order-1:paid"});
  CHECK(second["status"] == "duplicate_dedup_key");
  CHECK(second["id"] == first["id"]);

  const auto from_stdin =
      f.sluice({"enqueue", "--topic", "order.placed", "--payload-file", "-", "--delay", "15m"}, {},
               "{\"order\": 2}");
  CHECK(from_stdin.exit_code == 0);
  const auto events = f.json({"events", "--topic", "order.placed"})["events"];
  REQUIRE(events.size() == 2);
  CHECK(events[0]["id"] == "order-1");
  CHECK(events[0]["key"] == "k1");
  CHECK(events[0]["headers"]["trace"] == "abc");
  CHECK(events[0]["payload"]["order"] == 1);
  CHECK(events[0]["not_before"].is_null());
  CHECK(events[1]["payload"]["order"] == 2);
  CHECK(events[1]["not_before"].is_string());
  CHECK(parse_time(events[1]["not_before"].get<std::string>()) >
        parse_time(events[1]["created_at"].get<std::string>()) + std::chrono::minutes(14));
}

TEST_CASE("enqueue --version stores the version that show, events and --json print") {
  CliFixture f;
  f.init();
  REQUIRE(f.sluice({"enqueue", "--topic", "t", "--id", "plain"}).exit_code == 0);
  REQUIRE(f.sluice({"enqueue", "--topic", "t", "--id", "second", "--version", "2"}).exit_code == 0);
  const auto events = f.json({"events"})["events"];
  REQUIRE(events.size() == 2);
  CHECK(events[0]["version"] == 1);
  CHECK(events[1]["version"] == 2);
  CHECK(f.sluice({"show", "second"}).out.find("version     2\n") != std::string::npos);
  const auto table = f.sluice({"events"}).out;
  CHECK(table.find("VERSION") != std::string::npos);
  for (const char* bad : {"0", "-3"}) {
    CAPTURE(bad);
    const auto refused = f.sluice({"enqueue", "--topic", "t", "--version", bad});
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find("version") != std::string::npos);
  }
  CHECK(f.json({"events"})["events"].size() == 2);
}

TEST_CASE("events filters by topic, consumer and state, since and limit") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  const std::string bad = f.enqueue_order(2, true);
  f.sluice({"enqueue", "--topic", "user.created", "--payload", "{}"});
  f.deliver();
  CHECK(f.json({"events"})["events"].size() == 3);
  CHECK(f.json({"events", "--limit", "1"})["events"].size() == 1);
  CHECK(f.json({"events", "--topic", "user.created"})["events"].size() == 1);
  const auto dead = f.json({"events", "--consumer", "billing", "--state", "dead"})["events"];
  REQUIRE(dead.size() == 1);
  CHECK(dead[0]["id"] == bad);
  CHECK(f.json({"events", "--consumer", "billing", "--state", "delivered"})["events"].size() == 1);
  CHECK(f.json({"events", "--since", "1h"})["events"].size() == 3);
  CHECK(f.json({"events", "--since", "2999-01-01T00:00:00Z"})["events"].empty());

  const auto table = f.sluice({"events"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.rfind("SEQ  ID", 0) == 0);
  CHECK(table.out.find(bad) != std::string::npos);
  CHECK(table.out.find("{\"fail\":true,\"order\":2}") != std::string::npos);
}

TEST_CASE("events pages oldest or newest first, filters by key, ID and until, hints at more") {
  CliFixture f;
  f.init();
  std::vector<std::string> ids;
  for (int order = 1; order <= 5; ++order)
    ids.push_back(f.enqueue_order(order, false, "k" + std::to_string(order % 2)));
  const auto first = f.json({"events", "--limit", "2"});
  REQUIRE(first["events"].size() == 2);
  CHECK(first["events"][0]["id"] == ids[0]);
  CHECK(first["next_after_seq"] == first["events"][1]["seq"]);
  const auto rest =
      f.json({"events", "--after", to_string(first["next_after_seq"]), "--limit", "3"});
  REQUIRE(rest["events"].size() == 3);
  CHECK(rest["events"][0]["id"] == ids[2]);
  CHECK(rest["next_after_seq"].is_null());

  const auto newest = f.json({"events", "--newest-first", "--limit", "2"});
  REQUIRE(newest["events"].size() == 2);
  CHECK(newest["events"][0]["id"] == ids[4]);
  CHECK(newest["events"][1]["id"] == ids[3]);
  const auto older = f.json({"events", "--newest-first", "--before",
                             to_string(newest["next_before_seq"]), "--limit", "5"});
  REQUIRE(older["events"].size() == 3);
  CHECK(older["events"][0]["id"] == ids[2]);
  CHECK(older["next_before_seq"].is_null());

  CHECK(f.json({"events", "--key", "k1"})["events"].size() == 3);
  const auto one = f.json({"events", "--id", ids[3]})["events"];
  REQUIRE(one.size() == 1);
  CHECK(one[0]["id"] == ids[3]);
  CHECK(f.json({"events", "--until", "1h"})["events"].empty());
  CHECK(f.json({"events", "--until", "2999-01-01T00:00:00Z"})["events"].size() == 5);

  // The table stays only the table; the hint goes to stderr, naming the next page's option.
  const auto page = f.sluice({"events", "--limit", "2"});
  CHECK(page.exit_code == 0);
  CHECK(page.err == "More events match: the next page with --after " +
                        to_string(first["next_after_seq"]) + "\n");
  CHECK(f.sluice({"events"}).err.empty());
  CHECK(f.sluice({"events", "--newest-first", "--limit", "4"}).err.find("--before ") !=
        std::string::npos);
}

TEST_CASE("show prints an event with its payload and each consumer's history") {
  CliFixture f;
  f.init();
  const std::string bad = f.enqueue_order(7, true);
  f.deliver();
  const auto shown = f.json({"show", bad});
  CHECK(shown["event"]["id"] == bad);
  CHECK(shown["event"]["payload"]["order"] == 7);
  REQUIRE(shown["deliveries"].size() == 1);
  CHECK(shown["deliveries"][0]["consumer"] == "billing");
  CHECK(shown["deliveries"][0]["state"] == "dead");
  CHECK(shown["deliveries"][0]["last_error"] == "order 7 rejected: card 'ORDER-7' declined");
  REQUIRE_FALSE(shown["attempts"].empty());
  CHECK(shown["attempts"].back()["outcome"] == "permanent");

  const auto human = f.sluice({"show", bad});
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("payload\n  {\n    \"fail\": true,\n    \"order\": 7\n  }") !=
        std::string::npos);
  CHECK(human.out.find("billing   dead") != std::string::npos);
}

TEST_CASE("stats reports each consumer's counts in a table and as JSON") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.enqueue_order(2, true);
  f.deliver();
  f.enqueue_order(3);
  const auto stats = f.json({"stats"});
  CHECK(stats["generated_at"].is_string());
  REQUIRE(stats["consumers"].size() == 1);
  const auto& billing = stats["consumers"][0];
  CHECK(billing["consumer"] == "billing");
  CHECK(billing["topics"] == json::array({"order.placed"}));
  CHECK(billing["pending"] == 1);
  CHECK(billing["dead"] == 1);
  CHECK(billing["delivered_total"] == 1);
  CHECK(billing["claimed"] == 0);
  CHECK(billing["lag_seconds"].is_number());
  for (const char* field : {"retrying", "retries_total", "parked_keys"})
    CHECK(billing.contains(field));

  const auto table = f.sluice({"stats"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.rfind("CONSUMER  TOPICS        PENDING", 0) == 0);
  CHECK(table.out.find("billing   order.placed") != std::string::npos);
  CHECK(table.out.find("\x1b[") == std::string::npos);
}

TEST_CASE("stats and check show where a NATS ingester stands in its stream") {
  CliFixture f;
  f.init();
  {
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.exec(
        "INSERT INTO sluice_nats_positions (stream, durable, stream_seq) "
        "VALUES ('ORDERS', 'billing', 1234567890123)");
  }
  const auto stats = f.json({"stats"});
  REQUIRE(stats["ingest"].size() == 1);
  CHECK(stats["ingest"][0]["stream"] == "ORDERS");
  CHECK(stats["ingest"][0]["durable"] == "billing");
  CHECK(stats["ingest"][0]["stream_seq"] == 1234567890123LL);
  const auto table = f.sluice({"stats"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("STREAM  DURABLE       POSITION\n") != std::string::npos);
  CHECK(table.out.find("ORDERS  billing  1234567890123") != std::string::npos);
  const auto check = f.sluice({"check"});
  CHECK(check.exit_code == 0);
  CHECK(check.out.find("ingest") != std::string::npos);
  CHECK(check.out.find("ORDERS/billing at stream seq 1234567890123") != std::string::npos);
}

TEST_CASE("stats --watch samples until interrupted") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.deliver();
  ChildProcess watch({cli_path(), "--db", f.db_path, "stats", "--watch", "200ms", "--json"},
                     CliFixture::clean_env({}));
  REQUIRE(watch.wait_for_lines(ChildProcess::Stream::kOut, 2, seconds(20)));
  watch.signal(SIGINT);
  CHECK(watch.wait(seconds(20)) == 0);
  const auto first_line = watch.out().substr(0, watch.out().find('\n'));
  CHECK(json::parse(first_line)["consumers"][0]["consumer"] == "billing");

  ChildProcess table({cli_path(), "--db", f.db_path, "stats", "--watch", "1"},
                     CliFixture::clean_env({}));
  REQUIRE(table.wait_for_output(ChildProcess::Stream::kOut, "BACKLOG TREND", seconds(20)));
  table.signal(SIGTERM);
  CHECK(table.wait(seconds(20)) == 0);
  CHECK(table.out().find("▁") != std::string::npos);

  CHECK(f.sluice({"stats", "--watch", "0"}).exit_code == 2);
}

TEST_CASE("stats --watch redraws as soon as another process commits, before its interval") {
  CliFixture f;
  f.init();
  ChildProcess watch({cli_path(), "--db", f.db_path, "stats", "--watch", "1h", "--json"},
                     CliFixture::clean_env({}));
  REQUIRE(watch.wait_for_lines(ChildProcess::Stream::kOut, 1, seconds(20)));
  f.enqueue_order(1);
  CHECK(watch.wait_for_lines(ChildProcess::Stream::kOut, 2, seconds(20)));
  watch.signal(SIGINT);
  CHECK(watch.wait(seconds(20)) == 0);
}

TEST_CASE("tail follows new events as they commit, with a topic filter, until interrupted") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);  // Before tail starts: not shown.
  ChildProcess tail({cli_path(), "--db", f.db_path, "tail", "--topic", "order.placed", "--json"},
                    CliFixture::clean_env({}));
  REQUIRE(tail.wait_for_output(ChildProcess::Stream::kErr, "following", seconds(20)));
  const std::string second = f.enqueue_order(2);
  f.sluice({"enqueue", "--topic", "other.topic", "--payload", "{}"});
  const std::string third = f.enqueue_order(3);
  REQUIRE(tail.wait_for_lines(ChildProcess::Stream::kOut, 2, seconds(20)));
  tail.signal(SIGINT);
  CHECK(tail.wait(seconds(20)) == 0);
  const std::string& out = tail.out();
  const auto newline = out.find('\n');
  CHECK(json::parse(out.substr(0, newline))["id"] == second);
  CHECK(json::parse(out.substr(newline + 1, out.find('\n', newline + 1) - newline - 1))["id"] ==
        third);
  CHECK(std::count(out.begin(), out.end(), '\n') == 2);
}

TEST_CASE("dlq list groups dead letters by error fingerprint with counts and first/last seen") {
  CliFixture f;
  f.init();
  f.enqueue_order(1, true);
  f.enqueue_order(22, true);
  f.enqueue_order(333, true);
  f.enqueue_order(4);
  f.deliver();
  const auto list = f.json({"dlq", "list"})["dead_letters"];
  REQUIRE(list.size() == 3);
  CHECK(list[0]["consumer"] == "billing");
  CHECK(list[0]["reason"] == "permanent");
  CHECK(list[0]["last_error"] == "order 1 rejected: card 'ORDER-1' declined");
  CHECK(list[0]["fingerprint"] == "order <n> rejected: card '<v>' declined");
  for (const char* field : {"event_id", "event_seq", "topic", "key", "attempts", "first_failed_at",
                            "last_failed_at", "discarded", "note"}) {
    CHECK(list[0].contains(field));
  }
  const auto groups = f.json({"dlq", "list", "--group"})["groups"];
  REQUIRE(groups.size() == 1);
  CHECK(groups[0]["count"] == 3);
  CHECK(groups[0]["fingerprint"] == "order <n> rejected: card '<v>' declined");
  CHECK(groups[0]["consumers"] == json::array({"billing"}));
  CHECK(groups[0]["event_ids"].size() == 3);
  CHECK(groups[0]["first_seen"] <= groups[0]["last_seen"]);

  CHECK(f.json({"dlq", "list", "--error", "order 22 "})["dead_letters"].size() == 1);
  CHECK(f.json({"dlq", "list", "--topic", "nothing.here"})["dead_letters"].empty());
  const auto grouped_table = f.sluice({"dlq", "list", "--group"});
  CHECK(grouped_table.out.rfind("COUNT  CONSUMERS", 0) == 0);
  CHECK(grouped_table.out.find("    3  billing") != std::string::npos);
}

TEST_CASE("a discarded dead letter shows both its original reason and the operator's note") {
  CliFixture f;
  f.init();
  const std::string id = f.enqueue_order(1, true);
  f.enqueue_order(2, true);
  f.deliver();
  REQUIRE(f.sluice({"dlq", "discard", id, "--note", "test order, JIRA-7"}).exit_code == 0);
  const auto listed = f.sluice({"dlq", "list", "--discarded"});
  CHECK(listed.exit_code == 0);
  CHECK(listed.out.find("NOTE") != std::string::npos);
  CHECK(listed.out.find("test order, JIRA-7") != std::string::npos);
  // Without discarded records there is no note to show.
  CHECK(f.sluice({"dlq", "list"}).out.find("NOTE") == std::string::npos);

  const auto shown = f.sluice({"dlq", "show", id});
  CHECK(shown.exit_code == 0);
  CHECK(shown.out.find("reason       permanent\n") != std::string::npos);
  CHECK(shown.out.find("discarded    test order, JIRA-7\n") != std::string::npos);
  CHECK(shown.out.find("error        order 1 rejected") != std::string::npos);
}

TEST_CASE("dlq show, replay and discard act on named dead letters and report what they did") {
  CliFixture f;
  f.init();
  const std::string a = f.enqueue_order(1, true);
  const std::string b = f.enqueue_order(2, true);
  const std::string c = f.enqueue_order(3, true);
  f.deliver();

  const auto shown = f.json({"dlq", "show", a, "--consumer", "billing"});
  CHECK(shown["event"]["id"] == a);
  CHECK(shown["dead_letters"][0]["reason"] == "permanent");
  CHECK(shown["attempts"].back()["outcome"] == "permanent");
  const auto shown_text = f.sluice({"dlq", "show", a});
  CHECK(shown_text.out.find("fingerprint  order <n> rejected") != std::string::npos);

  const auto dry = f.json({"dlq", "replay", a, "--dry-run"});
  CHECK(dry["dry_run"] == true);
  CHECK(dry["replayed"] == 0);
  CHECK(dry["dead_letters"].size() == 1);
  CHECK(f.json({"dlq", "list"})["dead_letters"].size() == 3);

  const auto replayed = f.sluice({"dlq", "replay", a});
  CHECK(replayed.exit_code == 0);
  CHECK(replayed.out == "replayed 1 dead letter(s)\n");
  CHECK(f.json({"stats"})["consumers"][0]["pending"] == 1);

  const auto discarded = f.json({"dlq", "discard", b, "--note", "test order, JIRA-1"});
  CHECK(discarded["discarded"] == 1);
  CHECK(discarded["note"] == "test order, JIRA-1");
  CHECK(f.json({"dlq", "list"})["dead_letters"].size() == 1);
  const auto audit = f.json({"dlq", "list", "--discarded"})["dead_letters"];
  CHECK(audit.size() == 2);
  bool found_note = false;
  for (const auto& d : audit)
    found_note |= d["discarded"] == true && d["note"] == "test order, JIRA-1";
  CHECK(found_note);

  const auto paced = f.json({"dlq", "replay", "--all", "--rate", "100"});
  CHECK(paced["replayed"] == 1);
  CHECK(paced["dead_letters"][0]["event_id"] == c);
  CHECK(f.json({"dlq", "list"})["dead_letters"].empty());
  CHECK(f.sluice({"dlq", "replay", "--all"}).out == "replayed 0 dead letter(s)\n");
}

TEST_CASE("replay backfills one consumer from an event or a time, with a dry run") {
  CliFixture f;
  f.init();
  const std::string first = f.enqueue_order(1);
  f.enqueue_order(2);
  f.enqueue_order(3);
  f.deliver();
  CHECK(f.applied_count() == 3);
  const auto dry = f.json({"replay", "--consumer", "billing", "--from-event", first, "--dry-run"});
  CHECK(dry == json{{"consumer", "billing"}, {"dry_run", true}, {"events", 3}});
  const auto queued = f.sluice({"replay", "--consumer", "billing", "--since", "1h"});
  CHECK(queued.exit_code == 0);
  CHECK(queued.out == "queued 3 event(s) for billing\n");
  f.deliver();
  CHECK(f.applied_count() == 6);
}

TEST_CASE("prune refuses a retention under the dedup horizon unless forced") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.enqueue_order(2);
  f.enqueue_order(3, true);
  f.deliver();
  const auto refused = f.sluice({"prune", "--older-than", "0s"});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("under the dedup horizon") != std::string::npos);
  CHECK(f.json({"events"})["events"].size() == 3);

  const auto dry = f.json({"prune", "--older-than", "0s", "--force", "--dry-run"});
  CHECK(dry["dry_run"] == true);
  CHECK(dry["older_than"] == "0s");
  CHECK(dry["dedup_horizon"].is_string());
  const long long would = dry["pruned"];
  CHECK(would >= 1);
  CHECK(f.json({"events"})["events"].size() == 3);
  const auto pruned = f.json({"prune", "--older-than", "0s", "--force"});
  CHECK(pruned["pruned"] == would);
  // The dead-lettered event is never pruned.
  CHECK(f.json({"events"})["events"].size() == 3 - would);
  CHECK(f.json({"dlq", "list"})["dead_letters"].size() == 1);
  CHECK(f.json({"prune", "--older-than", "7d"})["pruned"] == 0);
}

TEST_CASE("check says healthy with exit 0 and warns with exit 1, naming each check") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.deliver(true);  // ordered: a dead letter below parks its key
  const auto healthy = f.sluice({"check", "--json"});
  CHECK(healthy.exit_code == 0);
  const auto report = json::parse(healthy.out);
  CHECK(report["status"] == "ok");
  std::vector<std::string> names;
  for (const auto& c : report["checks"]) names.push_back(c["name"]);
  CHECK(names == std::vector<std::string>{"integrity", "schema", "dedup_horizon", "expired_claims",
                                          "dead_letters", "parked_keys", "stuck", "lag",
                                          "claim_age", "paused", "breaker", "retention",
                                          "no_handler"});

  f.enqueue_order(2, true, "customer-9");
  f.deliver(true);
  const auto warned = f.sluice({"check", "--json"});
  CHECK(warned.exit_code == 1);
  const auto warnings = json::parse(warned.out);
  CHECK(warnings["status"] == "warning");
  for (const auto& c : warnings["checks"]) {
    CAPTURE(c.dump());
    const bool expect_warning = c["name"] == "dead_letters" || c["name"] == "parked_keys";
    CHECK(c["status"] == (expect_warning ? "warning" : "ok"));
  }
  const auto text = f.sluice({"check"});
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("dead_letters    warning  1 dead letter(s): billing 1") != std::string::npos);
}

TEST_CASE("metrics prints the Prometheus exposition of every consumer") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.enqueue_order(2, true);
  f.deliver();
  const auto metrics = f.sluice({"metrics"});
  CHECK(metrics.exit_code == 0);
  CHECK(metrics.out.find("# TYPE sluice_dead_letters gauge") != std::string::npos);
  CHECK(metrics.out.find("sluice_dead_letters{consumer=\"billing\"} 1") != std::string::npos);
  CHECK(metrics.out.find("sluice_delivered_total{consumer=\"billing\"} 1") != std::string::npos);
}

TEST_CASE("colour only on a terminal, and never with NO_COLOR set") {
  CliFixture f;
  f.init();
  f.enqueue_order(1, true);
  f.deliver();
  const std::vector<std::string> argv{cli_path(), "--db", f.db_path, "stats"};
  const auto coloured = run_in_terminal(argv, CliFixture::clean_env({}));
  CHECK(coloured.exit_code == 0);
  CHECK(coloured.out.find("\x1b[31m1\x1b[0m") != std::string::npos);
  const auto plain = run_in_terminal(argv, CliFixture::clean_env({{"NO_COLOR", "1"}}));
  CHECK(plain.exit_code == 0);
  CHECK(plain.out.find("billing") != std::string::npos);
  CHECK(plain.out.find("\x1b[") == std::string::npos);
  CHECK(f.sluice({"stats"}).out.find("\x1b[") == std::string::npos);
}

TEST_CASE("show, dlq show and --json name the trace ID of an event's traceparent") {
  CliFixture f;
  f.init();
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string id =
      f.sluice({"enqueue", "--topic", "order.placed", "--payload", "{\"order\":1,\"fail\":true}",
                "--header", "traceparent=00-" + trace + "-00f067aa0ba902b7-01"})
          .out;
  const std::string plain =
      f.sluice({"enqueue", "--topic", "order.placed", "--payload", "{\"order\":2}"}).out;
  const std::string traced_id = id.substr(0, id.size() - 1);
  CHECK(f.sluice({"show", traced_id}).out.find("trace       " + trace + "\n") != std::string::npos);
  CHECK(f.json({"show", traced_id})["event"]["trace_id"] == trace);
  CHECK(f.json({"show", plain.substr(0, plain.size() - 1)})["event"]["trace_id"].is_null());
  CHECK(f.sluice({"show", plain.substr(0, plain.size() - 1)}).out.find("trace ") ==
        std::string::npos);
  f.deliver();
  CHECK(f.sluice({"dlq", "show", traced_id}).out.find("trace        " + trace + "\n") !=
        std::string::npos);
  CHECK(f.json({"dlq", "show", traced_id})["event"]["trace_id"] == trace);
  const auto listed = f.json({"dlq", "list"})["dead_letters"];
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["trace_id"] == trace);
}
