// What a newcomer meets first: --version, help that shows each command, errors that say where to
// look, a payload that defaults as in the library, a busy timeout that can be set.
#include <doctest/doctest.h>

#include "support/cli_fixture.hpp"

using namespace sluice::test;

TEST_CASE("--version names the release and the schema it writes") {
  const auto result = CliFixture::sluice_bare({"--version"});
  CHECK(result.exit_code == 0);
  CHECK(result.out.rfind("sluice ", 0) == 0);
  CHECK(result.out.find(" (schema version " + std::to_string(sluice::schema_version()) + ")\n") !=
        std::string::npos);
}

TEST_CASE("each command's --help shows an example of that command") {
  for (const std::string command :
       {"init", "migrate", "stats", "events", "show", "tail", "enqueue", "dlq", "replay",
        "consumer", "prune", "check", "export", "metrics", "audit", "console"}) {
    CAPTURE(command);
    const auto help = CliFixture::sluice_bare({command, "--help"});
    CHECK(help.exit_code == 0);
    const auto example = help.out.find("Example:\n");
    REQUIRE(example != std::string::npos);
    CHECK(help.out.find("sluice --db app.db " + command, example) != std::string::npos);
  }
}

TEST_CASE("usage errors point to the command's --help; a mistyped command gets the nearest") {
  CliFixture f;
  f.init();
  const auto flag = f.sluice({"dlq", "list", "--no-such-flag"});
  CHECK(flag.exit_code == 2);
  CHECK(flag.err.find("--no-such-flag") != std::string::npos);
  CHECK(flag.err.find("(see sluice dlq list --help)\n") != std::string::npos);
  const auto typo = f.sluice({"stat"});
  CHECK(typo.exit_code == 2);
  CHECK(typo.err == "sluice: unknown command 'stat'; did you mean 'stats'? (see sluice --help)\n");
  CHECK(f.sluice({"frobnicate"}).err ==
        "sluice: unknown command 'frobnicate' (see sluice --help)\n");
  const auto refused = f.sluice({"prune", "--older-than", "1s"});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("(see sluice prune --help)\n") != std::string::npos);
}

TEST_CASE("enqueue without a payload stores {} as the library does") {
  CliFixture f;
  f.init();
  CHECK(f.sluice({"enqueue", "--topic", "t"}).exit_code == 0);
  const auto events = f.json({"events"})["events"];
  REQUIRE(events.size() == 1);
  CHECK(events[0]["payload"] == nlohmann::json::object());
}

TEST_CASE("export takes the event ID as its positional argument, like show") {
  CliFixture f;
  f.init();
  const std::string id = f.enqueue_order(1);
  const std::string out = f.dir.file("incident.db");
  CHECK(f.json({"export", id, "-o", out})["event_id"] == id);
  const auto none = f.sluice({"export", "-o", f.dir.file("other.db")});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no EVENT_ID") != std::string::npos);
}

TEST_CASE("--busy-timeout takes a duration and refuses anything else before opening the file") {
  CliFixture f;
  f.init();
  CHECK(f.sluice({"--busy-timeout", "2s", "stats"}).exit_code == 0);
  const auto bad = f.sluice({"--busy-timeout", "soon", "stats"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("invalid duration 'soon'") != std::string::npos);
}

TEST_CASE("a file that is not SQLite is named once with its path, its error said once") {
  CliFixture f;
  {
    std::ofstream out(f.db_path);
    out << "not a database at all, not even close to one; just some text\n";
  }
  const auto result = f.sluice({"stats"});
  CHECK(result.exit_code == 3);
  CHECK(result.err ==
        "sluice: open database '" + f.db_path + "': file is not a database (code 26)\n");
}

TEST_CASE("check says where its dedup horizon comes from") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.deliver();  // billing's own policy: two attempts 1 ms apart, far under the default's
  const auto checks = f.json({"check"})["checks"];
  std::string detail;
  for (const auto& check : checks) {
    if (check["name"] == "dedup_horizon") detail = check["detail"];
  }
  CHECK(detail ==
        "18s (the default retry policy's span, a floor above every consumer's own): "
        "prune with --older-than at least this");
}

TEST_CASE("dlq discard --json shows the records as the discard left them, as dlq list does") {
  CliFixture f;
  f.init();
  const std::string id = f.enqueue_order(1, true);
  f.deliver();
  const auto discarded = f.json({"dlq", "discard", id, "--note", "test order"})["dead_letters"];
  REQUIRE(discarded.size() == 1);
  CHECK(discarded[0]["discarded"] == true);
  CHECK(discarded[0]["note"] == "test order");
  CHECK(discarded[0]["reason"] == "permanent");
  const auto listed = f.json({"dlq", "list", "--discarded"})["dead_letters"];
  REQUIRE(listed.size() == 1);
  CHECK(listed[0] == discarded[0]);
  const auto text = f.sluice({"dlq", "list", "--discarded"});
  CHECK(text.out.find("permanent, discarded") != std::string::npos);
}

TEST_CASE("show names the consumers that subscribed after the event instead of saying none does") {
  CliFixture f;
  f.init();
  const std::string id = f.enqueue_order(1);
  {
    sluice::Worker worker(f.db_path, f.options());
    worker.subscribe("billing", "order.placed",
                     [](const sluice::Event&, sluice::Context&) {});  // from now on
    worker.run_until_idle();
  }
  const auto text = f.sluice({"show", id});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("no consumer subscribes") == std::string::npos);
  CHECK(text.out.find("  (billing subscribed to order.placed after this event; "
                      "sluice replay --consumer billing --from-event " +
                      id + " delivers it)\n") != std::string::npos);
  const auto json = f.json({"show", id});
  CHECK(json["deliveries"].empty());
  CHECK(json["subscribed_after"] == nlohmann::json::array({"billing"}));

  f.enqueue_order(2);
  CliFixture other;
  other.init();
  const std::string lonely = other.enqueue_order(3);
  CHECK(other.sluice({"show", lonely}).out.find("  (no consumer subscribes to order.placed)\n") !=
        std::string::npos);
  CHECK(other.json({"show", lonely})["subscribed_after"].empty());
}

TEST_CASE("relay and ingest --help show their own example, not the root command's") {
  if (CliFixture::sluice_bare({"--help"}).out.find("  relay") == std::string::npos) return;
  for (const std::string command : {"relay", "ingest"}) {
    CAPTURE(command);
    const auto help = CliFixture::sluice_bare({command, "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("Example:\n  sluice --db app.db " + command + " --nats ") !=
          std::string::npos);
    CHECK(help.out.find("SLUICE_DB=app.db sluice dlq list") == std::string::npos);
    CHECK(help.out.find("sluice_" + std::string(command == "relay" ? "relay" : "ingest") + "_") !=
          std::string::npos);
  }
}

TEST_CASE("metrics --help names every metric family the command prints") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.deliver();
  {
    SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
    db.exec("INSERT INTO sluice_nats_positions (stream, durable, stream_seq) VALUES ('S', 'd', 3)");
  }
  const auto metrics = f.sluice({"metrics"});
  REQUIRE(metrics.exit_code == 0);
  const std::string help = CliFixture::sluice_bare({"metrics", "--help"}).out;
  std::istringstream lines(metrics.out);
  std::string line;
  int families = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    const std::string name = line.substr(7, line.find(' ', 7) - 7);
    CAPTURE(name);
    CHECK(help.find(name) != std::string::npos);
    ++families;
  }
  CHECK(families >= 11);
}

TEST_CASE("a number out of range is refused in words, without a 300-digit bound") {
  CliFixture f;
  f.init();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"audit", "--after", "-1"},
                                               {"events", "--after", "-5"},
                                               {"events", "--limit", "0"},
                                               {"audit", "--limit", "x"}}) {
    CAPTURE(args[0] + " " + args[1] + " " + args[2]);
    const auto refused = f.sluice(args);
    CHECK(refused.exit_code == 2);
    CHECK(one_line(refused.err));
    CHECK(refused.err.size() < 200);
    CHECK(refused.err.find("must be a whole number, ") != std::string::npos);
    CHECK(refused.err.find("not '" + args[2] + "'") != std::string::npos);
  }
  CHECK(f.sluice({"dlq", "replay", "--all", "--rate", "-2", "--dry-run"})
            .err.find("must be a number above 0, not '-2'") != std::string::npos);
}

TEST_CASE("a mistyped subcommand gets the nearest one, with the command before it") {
  CliFixture f;
  f.init();
  const auto typo = f.sluice({"dlq", "lst"});
  CHECK(typo.exit_code == 2);
  CHECK(typo.err ==
        "sluice: unknown command 'dlq lst'; did you mean 'dlq list'? (see sluice dlq --help)\n");
  CHECK(f.sluice({"consumer", "remvoe", "x"}).err.find("did you mean 'consumer remove'?") !=
        std::string::npos);
}

TEST_CASE("--json is taken before the command as after it; global options after it too") {
  CliFixture f;
  f.init();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--json", "stats"}, {"stats", "--json"}}) {
    const auto stats = f.sluice(args);
    CHECK(stats.exit_code == 0);
    CHECK(stats.out.find("\"consumers\"") != std::string::npos);
  }
  const auto nested = f.sluice({"dlq", "--json", "list"});
  CHECK(nested.exit_code == 0);
  CHECK(nested.out.find("\"dead_letters\"") != std::string::npos);
  // A command without --json says so, pointing at its own help.
  const auto metrics = f.sluice({"--json", "metrics"});
  CHECK(metrics.exit_code == 2);
  CHECK(metrics.err.find("(see sluice metrics --help)") != std::string::npos);

  CHECK(f.sluice({"stats", "--busy-timeout", "2s"}).exit_code == 0);
  const auto db_after = CliFixture::sluice_bare({"dlq", "list", "--db", f.db_path, "--json"});
  CHECK(db_after.exit_code == 0);
  CHECK(db_after.out.find("\"dead_letters\"") != std::string::npos);
}
