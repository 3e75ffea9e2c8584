// Operators pause and resume a consumer from the command line: `consumer pause|resume|list`,
// with stats, check and the audit log showing it; and a consumer that paused itself, its circuit
// breaker open, shown the same way.
#include <doctest/doctest.h>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using nlohmann::json;

namespace {

// Consumers "mailer" and "billing" of order.placed, recorded in the file.
void two_consumers(const CliFixture& f) {
  sluice::Worker worker(f.db_path, f.options());
  worker.subscribe("mailer", "order.placed", [](const sluice::Event&, sluice::Context&) {});
  worker.subscribe("billing", "order.placed", [](const sluice::Event&, sluice::Context&) {});
}

}  // namespace

TEST_CASE("consumer pause, list and resume: the state in the file, shown and audited") {
  CliFixture f;
  f.init();
  two_consumers(f);

  const auto paused = f.sluice({"consumer", "pause", "mailer", "--for", "2h", "--note", "down"});
  REQUIRE(paused.exit_code == 0);
  CHECK(paused.out.find("mailer: paused since ") == 0);
  CHECK(paused.out.find(" by operator: down") != std::string::npos);

  const json list = f.json({"consumer", "list"});
  REQUIRE(list.size() == 2);
  CHECK(list[0]["consumer"] == "billing");
  CHECK(list[0]["paused"] == false);
  CHECK(list[0]["pause"].is_null());
  CHECK(list[1]["consumer"] == "mailer");
  CHECK(list[1]["paused"] == true);
  CHECK(list[1]["pause"]["by"] == "operator");
  CHECK(list[1]["pause"]["note"] == "down");
  CHECK(list[1]["pause"]["until"].is_string());

  const auto table = f.sluice({"consumer", "list"});
  CHECK(table.out.find("mailer    order.placed  paused") != std::string::npos);
  CHECK(f.sluice({"stats"}).out.find("mailer paused since") != std::string::npos);
  const json stats = f.json({"stats"});
  CHECK(stats["consumers"][1]["pause"]["note"] == "down");

  const json resumed = f.json({"consumer", "resume", "mailer"});
  CHECK(resumed["was_paused"] == true);
  CHECK(resumed["paused"] == false);
  CHECK(f.sluice({"consumer", "resume", "mailer"}).out == "mailer: was not paused\n");

  const json audit = f.json({"audit"})["entries"];
  REQUIRE(audit.size() == 3);
  CHECK(audit[0]["action"] == "pause");
  CHECK(audit[0]["source"] == "cli");
  CHECK(audit[0]["note"] == "down");
  CHECK(audit[1]["action"] == "resume");
  CHECK(audit[1]["count"] == 1);
  CHECK(audit[2]["count"] == 0);
}

TEST_CASE("consumer pause refuses bad input, writing nothing") {
  CliFixture f;
  f.init();
  two_consumers(f);
  CHECK(f.sluice({"consumer", "pause", "nobody"}).exit_code == 1);
  CHECK(f.sluice({"consumer", "pause", "mailer", "--for", "soon"}).exit_code == 2);
  const auto past = f.sluice({"consumer", "pause", "mailer", "--until", "2020-01-01T00:00:00Z"});
  CHECK(past.exit_code == 2);
  CHECK(past.err.find("not after now") != std::string::npos);
  CHECK(f.sluice({"consumer", "pause", "mailer", "--for", "1h", "--until", "2999-01-01T00:00:00Z"})
            .exit_code == 2);
  CHECK(f.json({"audit"})["entries"].empty());
  CHECK(f.json({"consumer", "list"})[1]["paused"] == false);
}

TEST_CASE("check warns about a consumer paused longer than --max-pause") {
  CliFixture f;
  f.init();
  two_consumers(f);
  REQUIRE(f.sluice({"consumer", "pause", "mailer"}).exit_code == 0);
  const auto fine = f.sluice({"check"});
  CHECK(fine.out.find("paused          ok") != std::string::npos);
  const auto warned = f.sluice({"check", "--max-pause", "0s"});
  CHECK(warned.exit_code == 1);
  CHECK(warned.out.find("paused          warning  consumer mailer: paused since") !=
        std::string::npos);
}

TEST_CASE("check and consumer list show a consumer whose circuit breaker is open") {
  CliFixture f;
  f.init();
  for (int i = 0; i < 3; ++i) f.enqueue_order(i);
  {
    sluice::Worker worker(f.db_path, f.options());
    sluice::ConsumerOptions options;
    options.mode = sluice::DeliveryMode::kOutsideTransaction;
    options.breaker = sluice::Breaker{
        .failures = 2, .cool_down = std::chrono::hours(1), .max_cool_down = std::chrono::hours(2)};
    options.start_from = sluice::StartFrom::kOldest;
    worker.subscribe(
        "mailer", "order.placed",
        [](const sluice::Event&, sluice::Context& ctx) { ctx.retry("mail API down"); }, options);
    worker.run_until_idle();
  }
  const json list = f.json({"consumer", "list"});
  REQUIRE(list.size() == 1);
  CHECK(list[0]["breaker"] == "open");
  CHECK(f.sluice({"consumer", "list"}).out.find("open") != std::string::npos);
  const auto checked = f.sluice({"check"});
  CHECK(checked.exit_code == 1);
  CHECK(checked.out.find("breaker         warning  consumer mailer: circuit breaker open until ") !=
        std::string::npos);
  CHECK(checked.out.find("after 2 transient failure(s) in a row (cool-down 1h)") !=
        std::string::npos);
}
