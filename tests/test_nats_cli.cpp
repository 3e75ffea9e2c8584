// `sluice relay` and `sluice ingest` as an operator runs them, against a real nats-server: they
// refuse a missing file, refuse a taken metrics port, and serve /metrics that promtool accepts.
#include <doctest/doctest.h>
#include <httplib.h>

#include <csignal>
#include <filesystem>
#include <thread>

#include "nats/jetstream_client.hpp"
#include "nats_server_process.hpp"
#include "sluice/sluice.hpp"
#include "support/child_process.hpp"
#include "support/promtool.hpp"

using namespace sluice;
using sluice::test::ChildProcess;
using sluice::test::ProcessResult;
using sluice::testing::NatsServerProcess;
using sluice::testing::TempDir;
using std::chrono::seconds;

namespace {

std::string cli() { return SLUICE_CLI; }

std::vector<std::string> relay_args(const NatsServerProcess& server, const std::string& file) {
  return {cli(),    "relay",   file,           "--nats",           server.url(), "--stream",
          "ORDERS", "--topic", "order.placed", "--subject-prefix", "orders"};
}

std::vector<std::string> ingest_args(const NatsServerProcess& server, const std::string& file) {
  return {cli(), "ingest", file, "--nats", server.url(), "--stream", "ORDERS", "--durable", "b"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The body of GET /metrics once it holds `needle`, or the last body after 20 s.
std::string scrape_until(int port, const std::string& needle) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(10);
  std::string body;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto response = client.Get("/metrics"); response && response->status == 200) {
      body = response->body;
      if (body.find(needle) != std::string::npos) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return body;
}

void check_promtool(const std::string& exposition) {
  const ProcessResult promtool = sluice::test::promtool_check_metrics(exposition);
  INFO(exposition << promtool.out << promtool.err);
  CHECK(promtool.exit_code == 0);
}

}  // namespace

TEST_CASE("relay and ingest refuse a file that does not exist and create nothing") {
  NatsServerProcess server;
  TempDir dir;
  // The file as a positional argument, or with --db after the command as every command takes it.
  auto with_db = [&](std::vector<std::string> args) {
    args.erase(args.begin() + 2);
    args.insert(args.begin() + 2, {"--db", dir.file("nothere.db")});
    return args;
  };
  for (const auto& args :
       {relay_args(server, dir.file("nothere.db")), ingest_args(server, dir.file("nothere.db")),
        with_db(relay_args(server, dir.file("nothere.db"))),
        with_db(ingest_args(server, dir.file("nothere.db")))}) {
    CAPTURE(args[1]);
    CAPTURE(args[2]);
    ChildProcess command(args);
    CHECK(command.wait(seconds(30)) == 1);  // not serving on a file it created
    CHECK(command.err().find("no file at") != std::string::npos);
    CHECK(command.err().find("started") == std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("nothere.db")));
  }
  nats::JetStreamClient client({.url = server.url()});
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  CHECK(js_GetStreamInfo(&info, client.jetstream(), "ORDERS", nullptr, &code) != NATS_OK);
  CHECK(code == JSStreamNotFoundErr);
  jsStreamInfo_Destroy(info);
}

TEST_CASE("the relay's and the ingester's /metrics pass promtool; a taken port is refused") {
  NatsServerProcess server;
  TempDir dir;
  const std::vector<int> ports = sluice::testing::free_loopback_ports(2);
  for (const char* file : {"a.db", "b.db"}) {
    REQUIRE(sluice::test::run_process({cli(), "--db", dir.file(file), "init"}).exit_code == 0);
  }
  {
    SQLite::Database db = open_database(dir.file("a.db"));
    Outbox outbox(db);
    for (int i = 0; i < 3; ++i) outbox.enqueue_now({.topic = "order.placed", .key = "k"});
  }
  const std::string consumer = "relay \"east\" \\ 2";
  const std::string relay_listen = "127.0.0.1:" + std::to_string(ports[0]);
  ChildProcess relay(with(relay_args(server, dir.file("a.db")),
                          {"--consumer", consumer, "--metrics-listen", relay_listen}));
  const std::string relayed = scrape_until(
      ports[0], "sluice_relay_published_total{consumer=\"relay \\\"east\\\" \\\\ 2\"} 3\n");
  CHECK(relayed.find("sluice_relay_published_total{consumer=\"relay \\\"east\\\" \\\\ 2\"} 3\n") !=
        std::string::npos);
  check_promtool(relayed);

  // A second relay of the same file on the same port: refused before it starts anything.
  ChildProcess second(with(relay_args(server, dir.file("a.db")),
                           {"--consumer", "other", "--metrics-listen", relay_listen}));
  CHECK(second.wait(seconds(30)) == 2);
  CHECK(second.err().find("cannot listen on " + relay_listen) != std::string::npos);

  ChildProcess ingest(with(ingest_args(server, dir.file("b.db")),
                           {"--metrics-listen", "127.0.0.1:" + std::to_string(ports[1])}));
  const std::string ingested =
      scrape_until(ports[1], "sluice_ingest_received_total{stream=\"ORDERS\",durable=\"b\"} 3\n");
  CHECK(ingested.find("sluice_ingest_received_total{stream=\"ORDERS\",durable=\"b\"} 3\n") !=
        std::string::npos);
  CHECK(ingested.find("sluice_ingest_position{stream=\"ORDERS\",durable=\"b\"} 3\n") !=
        std::string::npos);
  check_promtool(ingested);
  relay.signal(SIGTERM);
  ingest.signal(SIGTERM);
  CHECK(relay.wait(seconds(30)) == 0);
  CHECK(ingest.wait(seconds(30)) == 0);
}

TEST_CASE("relay --no-stream-update leaves an operator's stream alone; without it adds a subject") {
  NatsServerProcess server;
  TempDir dir;
  const int port = sluice::testing::free_loopback_ports(1)[0];
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  REQUIRE(sluice::test::run_process({cli(), "--db", dir.file("a.db"), "init"}).exit_code == 0);
  {
    SQLite::Database db = open_database(dir.file("a.db"));
    Outbox(db).enqueue_now({.topic = "order.placed"});
  }
  nats::JetStreamClient client({.url = server.url()});
  client.ensure_stream({.name = "ORDERS", .subjects = {"ops.>"}});
  const auto subjects = [&] {
    jsStreamInfo* info = nullptr;
    REQUIRE(js_GetStreamInfo(&info, client.jetstream(), "ORDERS", nullptr, nullptr) == NATS_OK);
    std::vector<std::string> found(info->Config->Subjects,
                                   info->Config->Subjects + info->Config->SubjectsLen);
    jsStreamInfo_Destroy(info);
    return found;
  };

  ChildProcess verifying(with(relay_args(server, dir.file("a.db")),
                              {"--no-stream-update", "--metrics-listen", listen}));
  // A batch handled means the stream was checked and found lacking; it is tried again, so the
  // count only has to be past 0.
  std::string metrics;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  do {
    metrics = scrape_until(port, "sluice_relay_batches_total{");
    if (metrics.find("sluice_relay_batches_total{") != std::string::npos &&
        metrics.find("sluice_relay_batches_total{consumer=\"nats-relay\"} 0\n") ==
            std::string::npos)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  CHECK(metrics.find("sluice_relay_batches_total{consumer=\"nats-relay\"} 0\n") ==
        std::string::npos);
  CHECK(metrics.find("sluice_relay_published_total{consumer=\"nats-relay\"} 0\n") !=
        std::string::npos);
  verifying.signal(SIGTERM);
  CHECK(verifying.wait(seconds(30)) == 0);
  CHECK(verifying.err().find("does not take subject 'orders.>'") != std::string::npos);
  CHECK(subjects() == std::vector<std::string>{"ops.>"});

  ChildProcess adding(with(relay_args(server, dir.file("a.db")), {"--metrics-listen", listen}));
  const std::string relayed =
      scrape_until(port, "sluice_relay_published_total{consumer=\"nats-relay\"} 1\n");
  CHECK(relayed.find("sluice_relay_published_total{consumer=\"nats-relay\"} 1\n") !=
        std::string::npos);
  adding.signal(SIGTERM);
  CHECK(adding.wait(seconds(30)) == 0);
  CHECK(subjects() == std::vector<std::string>{"ops.>", "orders.>"});
}
