// `sluice metrics` checked by Prometheus's own promtool: exact counters past 10^9, odd consumer
// names, a lag of days; and a listener refused on a port another one already serves.
#include <doctest/doctest.h>

#include <regex>

#include "support/cli_fixture.hpp"
#include "support/promtool.hpp"

using namespace sluice::test;
using std::chrono::seconds;

TEST_CASE(
    "sluice metrics is exact and passes promtool with huge counters, odd names, days of lag") {
  CliFixture f;
  f.init();
  {
    sluice::Worker worker(f.db_path, f.options());
    for (const char* name : {"billing", "we\"ird\\name", "two lines"})
      worker.subscribe(name, "order.placed", [](const sluice::Event&, sluice::Context&) {});
  }
  f.enqueue_order(1);
  SQLite::Database db(f.db_path, SQLite::OPEN_READWRITE);
  // subscribe refuses a line break in a name; a file written by anything else may hold one.
  db.exec(
      "UPDATE sluice_consumers SET name = 'two' || char(10) || 'lines' WHERE name = 'two lines'");
  db.exec("UPDATE sluice_consumers SET delivered_total = 1234566, retries_total = 4000000001");
  // Enqueued two days, 3.284 s and a little (the time the command takes) ago.
  db.exec("UPDATE sluice_events SET created_at = created_at - 172803284");
  const ProcessResult metrics = f.sluice({"metrics"});
  REQUIRE(metrics.exit_code == 0);
  CHECK(metrics.out.find("sluice_delivered_total{consumer=\"billing\"} 1234566\n") !=
        std::string::npos);
  CHECK(metrics.out.find("sluice_retries_total{consumer=\"we\\\"ird\\\\name\"} 4000000001\n") !=
        std::string::npos);
  CHECK(metrics.out.find("sluice_backlog{consumer=\"two\\nlines\"} 1\n") != std::string::npos);
  std::smatch lag;
  REQUIRE(std::regex_search(metrics.out, lag,
                            std::regex("sluice_lag_seconds\\{consumer=\"billing\"\\} (\\S+)\n")));
  CHECK(std::regex_match(lag[1].str(), std::regex("\\d+(\\.\\d{1,3})?")));  // milliseconds
  CHECK(std::stod(lag[1].str()) >= 172803.284);
  CHECK(std::stod(lag[1].str()) < 172863.284);
  const ProcessResult promtool = promtool_check_metrics(metrics.out);
  INFO(promtool.out << promtool.err);
  CHECK(promtool.exit_code == 0);
}

TEST_CASE("a second metrics --listen on a port another one serves exits 2 and serves nothing") {
  CliFixture f;
  f.init();
  ChildProcess first({cli_path(), "--db", f.db_path, "metrics", "--listen", "127.0.0.1:0"},
                     CliFixture::clean_env({}));
  REQUIRE(first.wait_for_output(ChildProcess::Stream::kErr, "/metrics", seconds(30)));
  std::smatch match;
  const std::string announced = first.err();
  REQUIRE(std::regex_search(announced, match, std::regex("127\\.0\\.0\\.1:(\\d+)/metrics")));
  ChildProcess second(
      {cli_path(), "--db", f.db_path, "metrics", "--listen", "127.0.0.1:" + match[1].str()},
      CliFixture::clean_env({}));
  CHECK(second.wait(seconds(30)) == 2);
  CHECK(second.err().find("cannot listen on 127.0.0.1:" + match[1].str()) != std::string::npos);
}
