// `sluice console` as an operator and a script use it: a live console on a temp file, spoken to
// over HTTP. Every API call, bad input answered 4xx with a message naming it and nothing
// changed, read-only mode, the token, CSRF, Origin and Host checks, and the loopback default.
#include <doctest/doctest.h>
#include <httplib.h>

#include <csignal>
#include <regex>
#include <thread>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;
using std::chrono::seconds;

namespace {

// Not thread-safe. `sluice --db FILE console ARGS...` on a free loopback port, stopped with
// SIGINT (or killed by ChildProcess should a check fail first).
struct Console {
  Console(const CliFixture& f, std::vector<std::string> args = {},
          const std::string& listen = "127.0.0.1:0")
      : process([&] {
          std::vector<std::string> argv{cli_path(), "--db",     f.db_path,
                                        "console",  "--listen", listen};
          argv.insert(argv.end(), args.begin(), args.end());
          return ChildProcess(argv, CliFixture::clean_env({}));
        }()) {
    REQUIRE(process.wait_for_output(ChildProcess::Stream::kOut, "(Ctrl-C to stop)", seconds(30)));
    std::smatch match;
    const std::string announced = process.out();
    REQUIRE(std::regex_search(announced, match, std::regex("http://[^ ]*:(\\d+)/ serving")));
    port = std::stoi(match[1]);
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_connection_timeout(10);
    client->set_read_timeout(30);
  }

  ~Console() {
    process.signal(SIGINT);
    CHECK(process.wait(seconds(30)) == 0);
  }

  httplib::Result get(const std::string& path, const httplib::Headers& headers = {}) {
    return client->Get(path.c_str(), headers);
  }

  // GET expecting 200 and JSON.
  json get_json(const std::string& path) {
    auto answer = get(path);
    REQUIRE(answer);
    INFO(path << ": " << answer->body);
    REQUIRE(answer->status == 200);
    CHECK(answer->get_header_value("Content-Type") == "application/json; charset=utf-8");
    return json::parse(answer->body);
  }

  std::string csrf() { return get_json("/api/session")["csrf_token"]; }

  // POST with the session's CSRF token and the page's own Origin, as the page sends it.
  httplib::Result post(const std::string& path, const json& body, httplib::Headers headers = {}) {
    headers.emplace("X-CSRF-Token", csrf());
    if (headers.count("Origin") == 0) {
      headers.emplace("Origin", "http://127.0.0.1:" + std::to_string(port));
    }
    return client->Post(path.c_str(), headers, body.dump(), "application/json");
  }

  json post_json(const std::string& path, const json& body) {
    auto answer = post(path, body);
    REQUIRE(answer);
    INFO(path << " " << body.dump() << ": " << answer->body);
    REQUIRE(answer->status == 200);
    return json::parse(answer->body);
  }

  ChildProcess process;
  int port = 0;
  std::unique_ptr<httplib::Client> client;
};

// An answer with `status` and {"error": ...} containing `needle`.
void check_error(const httplib::Result& answer, int status, const std::string& needle) {
  REQUIRE(answer);
  INFO(answer->body);
  CHECK(answer->status == status);
  const json body = json::parse(answer->body, nullptr, false);
  REQUIRE(body.is_object());
  CHECK(body["error"].get<std::string>().find(needle) != std::string::npos);
}

// What an action could change: the dead letters (discarded too), the audit log and the events.
json state(const CliFixture& f) {
  return json{{"dlq", f.json({"dlq", "list", "--discarded"})},
              {"audit", f.json({"audit"})},
              {"events", f.json({"events", "--consumer", "billing", "--limit", "1000"})}};
}

// `text` as the page's encodeURIComponent sends it: every byte but unreserved ones as %XX.
std::string percent_encoded(const std::string& text) {
  std::string encoded;
  for (const unsigned char c : text) {
    if (std::isalnum(c) ||
        std::string("-_.!~*'()").find(static_cast<char>(c)) != std::string::npos) {
      encoded += static_cast<char>(c);
    } else {
      static const char* const kHex = "0123456789ABCDEF";
      encoded += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return encoded;
}

// A file with consumer billing, 3 delivered orders and 2 dead letters (orders 2 and 4).
void dead_letter_file(CliFixture& f, bool ordered = false) {
  f.init();
  f.enqueue_order(1);
  f.enqueue_order(2, true, ordered ? "customer-7" : "");
  f.enqueue_order(3);
  f.enqueue_order(4, true);
  f.enqueue_order(5);
  f.deliver(ordered);
}

}  // namespace

TEST_CASE("the console serves its page, session and overview on loopback until SIGINT") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f);
  auto page = console.get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(page->body.find("<html") != std::string::npos);
  CHECK(page->get_header_value("X-Frame-Options") == "DENY");
  CHECK(page->get_header_value("Content-Security-Policy").find("default-src 'self'") !=
        std::string::npos);
  auto same = console.get("/index.html");
  REQUIRE(same);
  CHECK(same->body == page->body);

  const json session = console.get_json("/api/session");
  CHECK(session["csrf_token"].get<std::string>().size() == 32);
  CHECK(session["read_only"] == false);

  const json overview = console.get_json("/api/overview");
  REQUIRE(overview["consumers"].size() == 1);
  const json& billing = overview["consumers"][0];
  CHECK(billing["consumer"] == "billing");
  CHECK(billing["name"] == "billing");
  CHECK(billing["dead"] == 2);
  CHECK(billing["backlog"] == 0);
  CHECK(billing["lag_ms"] == 0);
  CHECK(billing["delivered_total"] == 3);
  CHECK(overview["check"]["status"] == "warning");
  bool dead_letters_checked = false;
  for (const json& check : overview["check"]["checks"]) {
    if (check["name"] == "dead_letters") dead_letters_checked = check["status"] == "warning";
  }
  CHECK(dead_letters_checked);
  CHECK(overview["now"].get<long long>() > 0);
  CHECK(overview["read_only"] == false);

  // The first sample is taken before the console answers.
  const json history = console.get_json("/api/history");
  REQUIRE(!history["samples"].empty());
  const json& sample = history["samples"][0];
  CHECK(sample["at"].get<long long>() > 0);
  CHECK(sample["consumers"]["billing"]["dead"] == 2);
  CHECK(sample["consumers"]["billing"]["delivered_total"] == 3);
  CHECK(sample["consumers"]["billing"]["backlog"] == 0);
}

TEST_CASE("each consumer row carries the check's verdict; /api/workers lists the workers") {
  CliFixture f;
  dead_letter_file(f);
  f.enqueue_order(7);  // due, and no worker runs: stuck
  Console console(f);
  const json overview = console.get_json("/api/overview");
  const json& health = overview["consumers"][0]["health"];
  CHECK(health["status"] == "warning");
  REQUIRE(health["findings"].size() == 1);
  CHECK(health["findings"][0]["check"] == "stuck");
  CHECK(health["live_workers"] == 0);
  // The same rules as the check in the same answer: one verdict, not two (read a few
  // milliseconds apart, so the age in parentheses may differ).
  const auto before_age = [](const json& detail) {
    const std::string text = detail.get<std::string>();
    return text.substr(0, text.find(" ("));
  };
  for (const json& check : overview["check"]["checks"]) {
    if (check["name"] == "stuck") {
      CHECK(before_age(check["detail"]) == before_age(health["findings"][0]["detail"]));
      CHECK(before_age(check["detail"]) == "consumer billing: 1 event(s) due and no live worker");
    }
  }
  const json workers = console.get_json("/api/workers");
  CHECK(workers["workers"].is_array());
  CHECK(workers["now"].get<long long>() > 0);
}

TEST_CASE("a console that keeps its connections sees every commit made between two requests") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f);
  // Several requests, so that each of the console's threads has opened and kept a connection.
  for (int i = 0; i < 8; ++i) {
    CHECK(console.get_json("/api/overview")["consumers"][0]["dead"] == 2);
    CHECK(console.get_json("/api/events?limit=100")["events"].size() == 5);
  }
  const std::string id = f.enqueue_order(6);
  f.deliver();
  for (int i = 0; i < 8; ++i) {
    const json events = console.get_json("/api/events?limit=100")["events"];
    REQUIRE(events.size() == 6);
    CHECK(events[5]["id"] == id);
    CHECK(console.get_json("/api/overview")["consumers"][0]["delivered_total"] == 4);
    CHECK(console.get_json("/api/events/" + id)["event"]["id"] == id);
  }
}

TEST_CASE("events: search by topic, key, ID, dedup key and time, a keyset page at a time") {
  CliFixture f;
  f.init();
  std::vector<std::string> ids;
  {
    SQLite::Database db = sluice::open_database(f.db_path, f.options());
    sluice::Outbox outbox(db, f.options());
    for (int i = 0; i < 5; ++i) {
      ids.push_back(outbox
                        .enqueue_now({.topic = "order.placed",
                                      .payload = "{\"order\":" + std::to_string(i) + "}",
                                      .key = i % 2 == 0 ? "even" : "odd",
                                      .dedup_key = "order-" + std::to_string(i)})
                        .id);
    }
    outbox.enqueue_now({.topic = "user.created"});
  }
  Console console(f);

  std::vector<std::string> paged;
  std::string path = "/api/events?topic=order.placed&limit=2";
  for (int page = 0; page < 5; ++page) {
    const json answer = console.get_json(path);
    for (const json& e : answer["events"]) paged.push_back(e["id"]);
    if (answer["next_after_seq"].is_null()) break;
    CHECK(answer["events"].size() == 2);
    path = "/api/events?topic=order.placed&limit=2&after_seq=" +
           std::to_string(answer["next_after_seq"].get<long long>());
  }
  CHECK(paged == ids);

  const json odd = console.get_json("/api/events?key=odd");
  REQUIRE(odd["events"].size() == 2);
  CHECK(odd["events"][0]["id"] == ids[1]);
  CHECK(odd["events"][1]["id"] == ids[3]);
  CHECK(odd["next_after_seq"].is_null());
  const json by_id = console.get_json("/api/events?id=" + ids[2]);
  REQUIRE(by_id["events"].size() == 1);
  CHECK(by_id["events"][0]["payload"]["order"] == 2);
  const json by_dedup = console.get_json("/api/events?topic=order.placed&dedup_key=order-4");
  REQUIRE(by_dedup["events"].size() == 1);
  CHECK(by_dedup["events"][0]["id"] == ids[4]);
  CHECK(console.get_json("/api/events?since=1h")["events"].size() == 6);
  CHECK(console.get_json("/api/events?until=1h")["events"].empty());
  CHECK(console.get_json("/api/events?since=0&until=99999999999999")["events"].size() == 6);

  const json detail = console.get_json("/api/events/" + ids[0]);
  CHECK(detail["event"]["id"] == ids[0]);
  CHECK(detail["event"]["payload"]["order"] == 0);
  CHECK(detail["event"]["headers"].is_object());
  CHECK(detail["deliveries"].is_array());
  CHECK(detail["attempts"].is_array());

  check_error(console.get("/api/events?limit=0"), 400, "invalid limit '0'");
  check_error(console.get("/api/events?limit=ten"), 400, "invalid limit 'ten'");
  check_error(console.get("/api/events?after_seq=-1"), 400, "invalid after_seq");
  check_error(console.get("/api/events?since=yesterday"), 400, "invalid since");
  check_error(console.get("/api/events?topik=order.placed"), 400, "unknown parameter 'topik'");
  check_error(console.get("/api/events?topic=a&topic=b"), 400, "'topic' given twice");
  check_error(console.get("/api/events?state=dead"), 400, "a state filter needs a consumer");
  check_error(console.get("/api/events?dedup_key=order-4"), 400, "dedup_key needs topic");
  check_error(console.get("/api/events?consumer=nobody"), 404, "nobody");
  check_error(console.get("/api/events/no-such-event"), 404, "no-such-event");
  check_error(console.get("/api/nothing"), 404, "GET /api/nothing");
}

TEST_CASE(
    "an event ID with '/', '%', '?' or '#' in it opens, percent-encoded as the page sends it") {
  CliFixture f;
  f.init();
  const std::vector<std::string> ids = {"orders/42", "a/b/c", "50%off", "what?", "tag#1"};
  {
    SQLite::Database db = sluice::open_database(f.db_path, f.options());
    sluice::Outbox outbox(db, f.options());
    for (const std::string& id : ids) outbox.enqueue_now({.topic = "order.placed", .id = id});
  }
  Console console(f);
  for (const std::string& id : ids) {
    CAPTURE(id);
    const json detail = console.get_json("/api/events/" + percent_encoded(id));
    CHECK(detail["event"]["id"] == id);
  }
  CHECK(console.get_json("/api/events/orders%2F42")["event"]["id"] == "orders/42");
  check_error(console.get("/api/events/orders%2F43"), 404, "orders/43");
}

TEST_CASE("dead letters: groups by fingerprint, keyset pages, parked keys and what parks them") {
  CliFixture f;
  dead_letter_file(f, true);
  Console console(f);
  const json all = console.get_json("/api/dead-letters");
  REQUIRE(all["groups"].size() == 1);
  const json& group = all["groups"][0];
  CHECK(group["fingerprint"] == "order <n> rejected: card '<v>' declined");
  CHECK(group["consumer"] == "billing");
  CHECK(group["topic"] == "order.placed");
  CHECK(group["count"] == 2);
  CHECK(group["sample_error"] == "order 2 rejected: card 'ORDER-2' declined");
  CHECK(group["first_seen"].is_string());
  CHECK(group["last_seen"].is_string());
  REQUIRE(all["letters"].size() == 2);
  CHECK(all["letters"][0]["fingerprint"] == group["fingerprint"]);
  CHECK(all["next_after"].is_null());
  REQUIRE(all["parked_keys"].size() == 1);
  CHECK(all["parked_keys"][0] == json{{"consumer", "billing"},
                                      {"key", "customer-7"},
                                      {"parked_by_event_id", all["letters"][0]["event_id"]}});

  const json first = console.get_json("/api/dead-letters?limit=1");
  REQUIRE(first["letters"].size() == 1);
  CHECK(first["letters"][0] == all["letters"][0]);
  const json second = console.get_json("/api/dead-letters?limit=1&after=" +
                                       std::to_string(first["next_after"].get<long long>()));
  REQUIRE(second["letters"].size() == 1);
  CHECK(second["letters"][0] == all["letters"][1]);
  CHECK(second["next_after"].is_null());

  CHECK(console.get_json("/api/dead-letters?fingerprint=other")["letters"].empty());
  CHECK(console.get_json("/api/dead-letters?topic=user.created")["groups"].empty());
  check_error(console.get("/api/dead-letters?consumer=nobody"), 404, "nobody");
  check_error(console.get("/api/dead-letters?after=x"), 400, "invalid after 'x'");
}

// `n` more dead letters of consumer billing, each with an error of its own fingerprint ("card
// declined at shop aab", "... aac", ...), written straight into the file.
void many_dead_letters(const CliFixture& f, int n) {
  SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
  db.exec("BEGIN");
  SQLite::Statement events(
      db,
      "WITH RECURSIVE i(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM i WHERE x < ?) "
      "INSERT INTO sluice_events (id, topic, payload, created_at) "
      "SELECT 'bulk-' || x, 'order.placed', '{}', 1000 FROM i");
  events.bind(1, n);
  events.exec();
  db.exec(
      "INSERT INTO sluice_deliveries (consumer_id, event_seq, state, attempts, next_attempt_at, "
      "reason, last_error, first_failed_at, last_failed_at) SELECT c.id, e.seq, 'dead', 1, 0, "
      "'permanent', 'card declined at shop ' || char(97 + e.seq % 26, 97 + e.seq / 26 % 26, "
      "97 + e.seq / 676 % 26), 1000, 1000 FROM sluice_events e, sluice_consumers c "
      "WHERE e.id LIKE 'bulk-%' AND c.name = 'billing'");
  db.exec("COMMIT");
}

TEST_CASE("dead letters: the top groups with their totals, not every group of every letter") {
  CliFixture f;
  dead_letter_file(f);
  many_dead_letters(f, 3000);
  Console console(f);
  auto answer = console.get("/api/dead-letters?limit=1");
  REQUIRE(answer);
  REQUIRE(answer->status == 200);
  CHECK(answer->body.size() < 20'000);
  const json page = json::parse(answer->body);
  CHECK(page["groups"].size() == 20);
  CHECK(page["groups_total"] == 3001);  // the bulk's 3000 fingerprints and orders 2 and 4's one
  CHECK(page["dead_letters_total"] == 3002);
  CHECK(page["groups"][0]["count"] == 2);
  CHECK(page["groups"][0]["fingerprint"] == "order <n> rejected: card '<v>' declined");
  CHECK(page["letters"].size() == 1);

  // The groups page on, by rank; past the last one the totals still say what there is.
  const json next = console.get_json("/api/dead-letters?limit=1&groups=1000&group_offset=20");
  CHECK(next["groups"].size() == 1000);
  CHECK(next["groups"][0] != page["groups"][19]);
  const json past = console.get_json("/api/dead-letters?groups=5&group_offset=5000");
  CHECK(past["groups"].empty());
  CHECK(past["groups_total"] == 3001);
  CHECK(past["dead_letters_total"] == 3002);
  // One group's letters, a page at a time.
  const std::string fingerprint = next["groups"][0]["fingerprint"];
  const json one =
      console.get_json("/api/dead-letters?fingerprint=" + percent_encoded(fingerprint));
  REQUIRE(one["letters"].size() == 1);
  CHECK(one["letters"][0]["fingerprint"] == fingerprint);
  CHECK(one["groups_total"] == 1);
  check_error(console.get("/api/dead-letters?groups=0"), 400, "invalid groups '0'");
}

TEST_CASE(
    "replay and discard: a dry run changes nothing, the action is recorded in the audit log") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f);
  const json letters = console.get_json("/api/dead-letters")["letters"];
  REQUIRE(letters.size() == 2);
  const std::string two = letters[0]["event_id"];
  const std::string four = letters[1]["event_id"];
  const std::string fingerprint = letters[0]["fingerprint"];

  json before = state(f);
  const json preview =
      console.post_json("/api/dead-letters/replay",
                        {{"consumer", "billing"}, {"fingerprint", fingerprint}, {"dry_run", true}});
  CHECK(preview["count"] == 2);
  CHECK(preview["dry_run"] == true);
  CHECK(preview["events"] == json{two, four});
  CHECK(state(f) == before);

  // Bad input: refused with a message naming it, nothing changed.
  check_error(console.post("/api/dead-letters/replay", {{"ids", {"no-such-event"}}}), 404,
              "no-such-event");
  const std::string delivered = f.json({"events"})["events"][0]["id"];
  check_error(console.post("/api/dead-letters/replay", {{"ids", {delivered}}}), 404,
              "no dead letter for event " + delivered);
  check_error(console.post("/api/dead-letters/replay", {{"ids", {two}}, {"fingerprint", "x"}}), 400,
              "not both");
  check_error(console.post("/api/dead-letters/replay", json::object()), 400, "give \"ids\"");
  check_error(console.post("/api/dead-letters/replay", {{"ids", two}}), 400, "ids must be");
  check_error(console.post("/api/dead-letters/replay", {{"fingerprint", "nothing like it"}}), 404,
              "no dead letter with fingerprint 'nothing like it'");
  check_error(console.post("/api/dead-letters/replay", {{"ids", {two}}, {"dry_run", "yes"}}), 400,
              "dry_run must be true or false");
  check_error(console.post("/api/dead-letters/replay", {{"ids", {two}}, {"rate_per_second", 0}}),
              400, "rate_per_second");
  check_error(console.post("/api/dead-letters/replay", {{"ids", {two}}, {"consumer", "nobody"}}),
              404, "nobody");
  check_error(console.post("/api/dead-letters/replay", {{"ids", {two}}, {"idz", 1}}), 400,
              "unknown field 'idz'");
  check_error(console.post("/api/dead-letters/discard", {{"ids", {two}}}), 400, "note");
  check_error(console.post("/api/dead-letters/discard", {{"ids", {two}}, {"note", "  "}}), 400,
              "note");
  check_error(console.client->Post("/api/dead-letters/replay", {{"X-CSRF-Token", console.csrf()}},
                                   "{not json", "application/json"),
              400, "not JSON");
  check_error(console.get("/api/dead-letters/replay"), 405, "use POST");
  CHECK(state(f) == before);

  const json replayed =
      console.post_json("/api/dead-letters/replay", {{"ids", {two}}, {"rate_per_second", 50}});
  CHECK(replayed["count"] == 1);
  CHECK(replayed["dry_run"] == false);
  const json discarded = console.post_json("/api/dead-letters/discard",
                                           {{"ids", {four}}, {"note", "test order, JIRA-7"}});
  CHECK(discarded["count"] == 1);
  CHECK(discarded["note"] == "test order, JIRA-7");

  const json now = f.json({"dlq", "list", "--discarded"})["dead_letters"];
  REQUIRE(now.size() == 1);
  CHECK(now[0]["event_id"] == four);
  CHECK(now[0]["discarded"] == true);
  CHECK(f.json({"show", two})["deliveries"][0]["state"] == "pending");

  const json entries = console.get_json("/api/audit")["entries"];
  REQUIRE(entries.size() == 2);
  CHECK(entries[0]["action"] == "replay");
  CHECK(entries[0]["filter"] == json{{"ids", {two}}, {"rate_per_second", 50}});
  CHECK(entries[0]["count"] == 1);
  CHECK(entries[0]["note"].is_null());
  CHECK(entries[0]["source"] == "console");
  CHECK(entries[1]["action"] == "discard");
  CHECK(entries[1]["note"] == "test order, JIRA-7");
  CHECK(entries[1]["id"].get<long long>() > entries[0]["id"].get<long long>());
  const json page = console.get_json("/api/audit?limit=1");
  REQUIRE(page["entries"].size() == 1);
  CHECK(page["next_after"] == entries[0]["id"]);
  CHECK(console.get_json("/api/audit?after=" +
                         std::to_string(entries[0]["id"].get<long long>()))["entries"] ==
        json{entries[1]});
  check_error(console.get("/api/audit?limit=5000"), 400, "invalid limit");
  // The same log as the CLI lists it.
  CHECK(f.json({"audit"})["entries"] == entries);
}

TEST_CASE("a console killed mid-way through a paced replay leaves every replay on record") {
  CliFixture f;
  f.init();
  for (int order = 1; order <= 3; ++order) f.enqueue_order(order, true);
  f.deliver();
  ChildProcess process({cli_path(), "--db", f.db_path, "console", "--listen", "127.0.0.1:0"},
                       CliFixture::clean_env({}));
  REQUIRE(process.wait_for_output(ChildProcess::Stream::kOut, "(Ctrl-C to stop)", seconds(30)));
  std::smatch match;
  const std::string announced = process.out();
  REQUIRE(std::regex_search(announced, match, std::regex("http://[^ ]*:(\\d+)/ serving")));
  const int port = std::stoi(match[1]);
  std::thread replay([port] {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60);
    const auto session = client.Get("/api/session");
    if (!session) return;  // the checks below fail, no replay having happened
    const std::string csrf = json::parse(session->body)["csrf_token"];
    // One replay every 2 s: the kill comes between two of them.
    client.Post(
        "/api/dead-letters/replay", {{"X-CSRF-Token", csrf}},
        json{{"fingerprint", "order <n> rejected: card '<v>' declined"}, {"rate_per_second", 0.5}}
            .dump(),
        "application/json");
  });
  const auto replayed = [&f] {
    SQLite::Database db(f.db_path, SQLite::OPEN_READONLY);
    return db.execAndGet("SELECT count(*) FROM sluice_deliveries WHERE state = 'pending'")
        .getInt64();
  };
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (replayed() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling the file, not a wait
  }
  process.signal(SIGKILL);
  CHECK(process.wait(seconds(30)) == 128 + SIGKILL);
  replay.join();
  const long long done = replayed();
  REQUIRE(done >= 1);
  REQUIRE(done < 3);
  const json entries = f.json({"audit"})["entries"];
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]["action"] == "replay");
  CHECK(entries[0]["source"] == "console");
  CHECK(entries[0]["count"] == done);
}

TEST_CASE("backfill and prune: previews count, actions are recorded, bad input refused") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f);
  const std::string first = f.json({"events"})["events"][0]["id"];
  const json before = state(f);
  const json preview = console.post_json(
      "/api/backfill", {{"consumer", "billing"}, {"from_event", first}, {"dry_run", true}});
  CHECK(preview["count"] == 5);
  CHECK(preview["dry_run"] == true);
  const json since_preview = console.post_json(
      "/api/backfill", {{"consumer", "billing"}, {"since", 0}, {"dry_run", true}});
  CHECK(since_preview["count"] == 5);
  check_error(console.post("/api/backfill", {{"consumer", "nobody"}, {"since", 0}}), 404, "nobody");
  check_error(console.post("/api/backfill", {{"consumer", "billing"}}), 400, "\"since\"");
  check_error(
      console.post("/api/backfill", {{"consumer", "billing"}, {"since", 0}, {"from_event", first}}),
      400, "not both");
  check_error(console.post("/api/backfill", {{"consumer", "billing"}, {"from_event", "nope"}}), 404,
              "nope");
  check_error(console.post("/api/backfill", {{"consumer", "billing"}, {"since", true}}), 400,
              "since must be");
  check_error(console.post("/api/prune", {{"older_than", "1s"}}), 400, "under the dedup horizon");
  check_error(console.post("/api/prune", {{"older_than", "seven days"}}), 400,
              "invalid older_than");
  check_error(console.post("/api/prune", json::object()), 400, "older_than");
  CHECK(state(f) == before);

  const json pruned_preview =
      console.post_json("/api/prune", {{"older_than", "1d"}, {"force", true}, {"dry_run", true}});
  CHECK(pruned_preview["count"] == 0);  // nothing is a day old
  CHECK(pruned_preview["dry_run"] == true);
  CHECK(pruned_preview["held_back"].is_array());
  CHECK(state(f) == before);

  const json queued =
      console.post_json("/api/backfill", {{"consumer", "billing"}, {"from_event", first}});
  CHECK(queued["count"] == 5);
  const json pruned = console.post_json("/api/prune", {{"older_than", "30d"}});
  CHECK(pruned["count"] == 0);
  const json entries = console.get_json("/api/audit")["entries"];
  REQUIRE(entries.size() == 2);
  CHECK(entries[0]["action"] == "backfill");
  CHECK(entries[0]["filter"] == json{{"consumer", "billing"}, {"from_event", first}});
  CHECK(entries[0]["count"] == 5);
  CHECK(entries[1]["action"] == "prune");
  CHECK(entries[1]["filter"] == json{{"older_than", "30d"}});
}

TEST_CASE(
    "the CLI's replay, discard, backfill and prune are recorded too, and `audit` lists them") {
  CliFixture f;
  dead_letter_file(f);
  const std::string dead = f.json({"dlq", "list"})["dead_letters"][0]["event_id"];
  REQUIRE(f.sluice({"dlq", "replay", "--all", "--dry-run"}).exit_code == 0);
  REQUIRE(f.sluice({"dlq", "replay", dead}).exit_code == 0);
  REQUIRE(f.sluice({"dlq", "discard", "--all", "--consumer", "billing", "--note", "bad card"})
              .exit_code == 0);
  REQUIRE(f.sluice({"replay", "--consumer", "billing", "--since", "1h"}).exit_code == 0);
  REQUIRE(f.sluice({"prune", "--older-than", "30d"}).exit_code == 0);
  const json entries = f.json({"audit"})["entries"];
  REQUIRE(entries.size() == 4);  // not the dry run
  CHECK(entries[0]["action"] == "replay");
  CHECK(entries[0]["filter"] == json{{"event_ids", {dead}}});
  CHECK(entries[0]["count"] == 1);
  CHECK(entries[1]["action"] == "discard");
  CHECK(entries[1]["filter"] == json{{"consumer", "billing"}});
  CHECK(entries[1]["note"] == "bad card");
  CHECK(entries[2]["action"] == "backfill");
  CHECK(entries[2]["filter"] == json{{"consumer", "billing"}, {"since", "1h"}});
  CHECK(entries[2]["count"] == 4);  // not the replayed dead letter: it is pending already
  CHECK(entries[3]["action"] == "prune");
  for (const json& entry : entries) CHECK(entry["source"] == "cli");
  CHECK(f.json({"audit", "--after",
                std::to_string(entries[2]["id"].get<long long>())})["entries"] == json{entries[3]});
  const auto text = f.sluice({"audit"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("discard") != std::string::npos);
  CHECK(text.out.find("bad card") != std::string::npos);
}

// What the console_api fuzz target checks below HTTP, here through it: httplib decodes %FF into
// a byte that is no UTF-8, which must come back in a 4xx answer that is still JSON.
TEST_CASE("pause and resume: the consumer row says so, the audit log records it") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f);
  check_error(console.post("/api/consumers/pause", {{"consumer", "nobody"}}), 404, "nobody");
  check_error(console.post("/api/consumers/pause", json::object()), 400, "\"consumer\"");
  check_error(
      console.post("/api/consumers/pause", {{"consumer", "billing"}, {"for", "1h"}, {"until", 0}}),
      400, "not both");
  check_error(console.post("/api/consumers/pause", {{"consumer", "billing"}, {"until", 0}}), 400,
              "not after now");
  CHECK(console.get_json("/api/audit")["entries"].empty());

  const json paused = console.post_json("/api/consumers/pause",
                                        {{"consumer", "billing"}, {"for", "1h"}, {"note", "PSP"}});
  CHECK(paused["name"] == "billing");
  CHECK(paused["pause"]["by"] == "operator");
  CHECK(paused["pause"]["note"] == "PSP");
  CHECK(paused["pause"]["until"].is_string());
  bool shown = false;
  const json overview = console.get_json("/api/overview");
  for (const json& c : overview["consumers"])
    shown |= c["name"] == "billing" && c["pause"]["note"] == "PSP";
  CHECK(shown);
  const json resumed = console.post_json("/api/consumers/resume", {{"consumer", "billing"}});
  CHECK(resumed["was_paused"] == true);
  CHECK(resumed["pause"].is_null());
  const json entries = console.get_json("/api/audit")["entries"];
  REQUIRE(entries.size() == 2);
  CHECK(entries[0]["action"] == "pause");
  CHECK(entries[0]["source"] == "console");
  CHECK(entries[0]["note"] == "PSP");
  CHECK(entries[1]["action"] == "resume");
}

TEST_CASE("bytes that are not UTF-8 in a query, a path or a body: 4xx with JSON, never 500") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f);
  for (const char* path :
       {"/api/events?topic=%FF", "/api/events?%FF=1", "/api/events/%FF%C3", "/api/events?since=%C3",
        "/api/events?consumer=%ED%A0%80&state=dead", "/api/dead-letters?fingerprint=%FF",
        "/api/dead-letters?consumer=%FF", "/api/audit?after=%FF", "/api/%FF"}) {
    CAPTURE(path);
    const auto answer = console.get(path);
    REQUIRE(answer);
    CHECK(answer->status < 500);
    CHECK(json::accept(answer->body));
  }
  for (const std::string path :
       {"/api/dead-letters/replay", "/api/dead-letters/discard", "/api/backfill", "/api/prune"}) {
    for (const std::string body :
         {"{\"ids\": [\"\xff\"]}", "{\"consumer\": \"\xc3\"}", "\xff", "{\"note\": \"\\udc80\"}"}) {
      CAPTURE(path);
      CAPTURE(body);
      httplib::Headers headers{{"X-CSRF-Token", console.csrf()}};
      const auto answer = console.client->Post(path.c_str(), headers, body, "application/json");
      REQUIRE(answer);
      CHECK(answer->status == 400);
      CHECK(json::accept(answer->body));
    }
  }
}

TEST_CASE("actions need the session's CSRF token and the console's own Origin and Host") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f);
  const std::string dead = f.json({"dlq", "list"})["dead_letters"][0]["event_id"];
  const json before = state(f);
  const std::string body = json{{"ids", {dead}}}.dump();
  check_error(console.client->Post("/api/dead-letters/replay", body, "application/json"), 403,
              "X-CSRF-Token");
  check_error(console.client->Post("/api/dead-letters/replay", {{"X-CSRF-Token", "0123"}}, body,
                                   "application/json"),
              403, "X-CSRF-Token");
  check_error(console.post("/api/dead-letters/replay", {{"ids", {dead}}},
                           {{"Origin", "http://evil.example"}}),
              403, "Origin 'http://evil.example' refused");
  // A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) is not the console's page.
  check_error(
      console.get("/api/session", {{"Host", "evil.example:" + std::to_string(console.port)}}), 403,
      "Host 'evil.example");
  CHECK(state(f) == before);
  // Without an Origin header (a script, curl) the CSRF token suffices.
  auto scripted = console.client->Post(
      "/api/dead-letters/replay", {{"X-CSRF-Token", console.csrf()}}, body, "application/json");
  REQUIRE(scripted);
  CHECK(scripted->status == 200);
  CHECK(f.json({"dlq", "list"})["dead_letters"].size() == 1);
}

TEST_CASE("--read-only answers every action with 403 and still shows everything") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f, {"--read-only"});
  const json before = state(f);
  CHECK(console.get_json("/api/session")["read_only"] == true);
  CHECK(console.get_json("/api/overview")["read_only"] == true);
  CHECK(console.get_json("/api/dead-letters")["letters"].size() == 2);
  const std::string dead = f.json({"dlq", "list"})["dead_letters"][0]["event_id"];
  check_error(console.post("/api/dead-letters/replay", {{"ids", {dead}}}), 403, "read-only");
  check_error(console.post("/api/dead-letters/discard", {{"ids", {dead}}, {"note", "x"}}), 403,
              "read-only");
  check_error(console.post("/api/backfill", {{"consumer", "billing"}, {"since", 0}}), 403,
              "read-only");
  check_error(console.post("/api/prune", {{"older_than", "30d"}}), 403, "read-only");
  CHECK(state(f) == before);
}

TEST_CASE("--token: every request needs it, by header, by ?token= once, then by cookie") {
  CliFixture f;
  dead_letter_file(f);
  Console console(f, {"--token", "s3cret-token"});
  check_error(console.get("/api/overview"), 401, "token");
  check_error(console.get("/"), 401, "token");
  check_error(console.get("/api/overview", {{"Authorization", "Bearer wrong"}}), 401, "token");
  auto by_header = console.get("/api/overview", {{"Authorization", "Bearer s3cret-token"}});
  REQUIRE(by_header);
  CHECK(by_header->status == 200);
  auto page = console.get("/?token=s3cret-token");
  REQUIRE(page);
  CHECK(page->status == 200);
  const std::string cookie = page->get_header_value("Set-Cookie");
  CHECK(cookie.find("HttpOnly") != std::string::npos);
  CHECK(cookie.find("SameSite=Strict") != std::string::npos);
  auto by_cookie = console.get("/api/session", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  REQUIRE(by_cookie);
  CHECK(by_cookie->status == 200);
  check_error(console.get("/api/session", {{"Cookie", "sluice_console_token=wrong"}}), 401,
              "token");
}

TEST_CASE(
    "the console listens on loopback by default and refuses another address without a token") {
  CliFixture f;
  dead_letter_file(f);
  const auto help = f.sluice({"console", "--help"});
  CHECK(help.out.find("127.0.0.1:8080") != std::string::npos);
  const auto refused = f.sluice({"console", "--listen", "0.0.0.0:0"});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("refusing to listen on 0.0.0.0:0 without --token") != std::string::npos);
  const auto malformed = f.sluice({"console", "--listen", "localhost"});
  CHECK(malformed.exit_code == 2);
  CHECK(malformed.err.find("invalid listen address 'localhost'") != std::string::npos);
  // With a token any address is allowed, and any Host: the token is what keeps others out.
  Console open(f, {"--token", "t0ken"}, "0.0.0.0:0");
  auto answer = open.get("/api/session", {{"Authorization", "Bearer t0ken"},
                                          {"Host", "device.example:" + std::to_string(open.port)}});
  REQUIRE(answer);
  CHECK(answer->status == 200);
}
