// `sluice metrics --listen` serves the Prometheus exposition over HTTP until interrupted.
#include <doctest/doctest.h>
#include <httplib.h>

#include <csignal>
#include <regex>

#include "support/cli_fixture.hpp"

using namespace sluice::test;
using std::chrono::seconds;

TEST_CASE("metrics --listen serves /metrics on a free loopback port until SIGINT") {
  CliFixture f;
  f.init();
  f.enqueue_order(1);
  f.enqueue_order(2, true);
  f.deliver();
  ChildProcess server({cli_path(), "--db", f.db_path, "metrics", "--listen", "127.0.0.1:0"},
                      CliFixture::clean_env({}));
  REQUIRE(server.wait_for_output(ChildProcess::Stream::kErr, "/metrics", seconds(30)));
  std::smatch match;
  const std::string announced = server.err();
  REQUIRE(std::regex_search(announced, match, std::regex("http://127\\.0\\.0\\.1:(\\d+)/metrics")));
  const int port = std::stoi(match[1]);

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(10);
  client.set_read_timeout(10);
  auto scraped = client.Get("/metrics");
  REQUIRE(scraped);
  CHECK(scraped->status == 200);
  CHECK(scraped->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  CHECK(scraped->body.find("# HELP sluice_backlog") != std::string::npos);
  CHECK(scraped->body.find("sluice_dead_letters{consumer=\"billing\"} 1") != std::string::npos);

  // Each scrape reads the file afresh.
  f.enqueue_order(3, true);
  f.deliver();
  auto again = client.Get("/metrics");
  REQUIRE(again);
  CHECK(again->body.find("sluice_dead_letters{consumer=\"billing\"} 2") != std::string::npos);
  auto missing = client.Get("/nothing");
  REQUIRE(missing);
  CHECK(missing->status == 404);

  server.signal(SIGINT);
  CHECK(server.wait(seconds(30)) == 0);
}
