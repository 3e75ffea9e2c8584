// Scenario: events relayed from file A through JetStream into file B reach B's handler exactly
// once and in key order, while the relay, the broker and the ingester are killed and restarted.
// The relay and the ingester run as child processes (the CLI commands) so they can be SIGKILLed.
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "nats_server_process.hpp"
#include "sluice/sluice.hpp"

using namespace sluice;
using sluice::testing::ChildProcess;
using sluice::testing::NatsCluster;
using sluice::testing::NatsServerProcess;
using sluice::testing::TempDir;

namespace {

constexpr const char* kTopic = "order.placed";
constexpr int kKeys = 50;

// Polls `done` until it holds or `limit` passes; the pause only spaces out the polls.
bool wait_until(const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool file_contains(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str().find(text) != std::string::npos;
}

std::string tail_of(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string tail;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i)
    tail += all[i] + "\n";
  return tail;
}

// Files A and B, B's application handler, and the relay and ingester processes between them.
class Pipeline {
 public:
  explicit Pipeline(std::string nats_urls, int replicas = 1)
      : urls_(std::move(nats_urls)), replicas_(replicas) {
    SQLite::Database b = open_database(b_path());
    b.exec(
        "CREATE TABLE applied (n INTEGER PRIMARY KEY, event_id TEXT, key TEXT, key_seq INTEGER)");
  }

  std::string a_path() const { return dir_.file("a.db"); }
  std::string b_path() const { return dir_.file("b.db"); }
  std::string relay_log() const { return dir_.file("relay.log"); }
  std::string ingester_log() const { return dir_.file("ingester.log"); }

  // Enqueues `count` events over kKeys keys; each payload holds its position within its key.
  void produce(int count) {
    SQLite::Database a = open_database(a_path());
    Outbox outbox(a);
    for (int done = 0; done < count;) {
      SQLite::Transaction tx(a);
      for (int i = 0; i < 500 && done < count; ++i, ++done) {
        const std::string key = "k" + std::to_string(produced_ % kKeys);
        outbox.enqueue({.topic = kTopic,
                        .payload = "{\"key_seq\":" + std::to_string(key_seq_[key]++) + "}",
                        .key = key});
        ++produced_;
      }
      tx.commit();
    }
  }

  // B's own consumer: applies each event in its delivery transaction.
  void start_application() {
    app_log_ = std::make_unique<std::ofstream>(dir_.file("app.log"));
    Options options;
    options.log = std::make_shared<JsonLinesSink>(*app_log_, LogLevel::kInfo);
    worker_ = std::make_unique<Worker>(b_path(), options);
    worker_->subscribe("app", kTopic,
                       [](const Event& event, Context& context) {
                         SQLite::Statement insert(
                             context.db(),
                             "INSERT INTO applied (event_id, key, key_seq) VALUES (?, ?, "
                             "json_extract(?, '$.key_seq'))");
                         insert.bind(1, event.id);
                         insert.bind(2, event.key);
                         insert.bind(3, event.payload);
                         insert.exec();
                       },
                       {.ordered = true, .start_from = StartFrom::kOldest});
    worker_->start();
  }

  void start_relay() {
    relay_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{SLUICE_NATS_DRIVER, "relay", a_path(), "--nats", urls_, "--stream",
                                 "EVENTS", "--topic", kTopic, "--subject-prefix", "sluice",
                                 "--replicas", std::to_string(replicas_)},
        relay_log());
  }

  void start_ingester(std::vector<std::pair<std::string, std::string>> env = {}) {
    ingester_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{SLUICE_NATS_DRIVER, "ingest", b_path(), "--nats", urls_,
                                 "--stream", "EVENTS", "--durable", "b"},
        ingester_log(), std::move(env));
  }

  ChildProcess& relay() { return *relay_; }
  ChildProcess& ingester() { return *ingester_; }

  long long applied_distinct() {
    SQLite::Database b = open_database(b_path());
    return b.execAndGet("SELECT COUNT(DISTINCT event_id) FROM applied").getInt64();
  }

  // Waits until B applied `count` events, restarting the ingester if its crash point fired.
  // On a timeout, shows the end of every log.
  bool wait_applied(long long count, std::chrono::seconds limit = std::chrono::seconds(120)) {
    const bool reached = wait_until(
        [&] {
          if (!relay_->running()) FAIL("the relay process died; see " << relay_log());
          if (!ingester_->running()) {
            ++ingester_crashes_;
            start_ingester();
          }
          return applied_distinct() >= count;
        },
        limit);
    if (!reached)
      for (const auto& log : {relay_log(), ingester_log(), dir_.file("app.log")})
        MESSAGE(log << ":\n" << tail_of(log, 15));
    return reached;
  }

  struct Tally {
    long long events = 0;
    long long lost = 0;
    long long double_applied = 0;
    long long out_of_key_order = 0;
    long long dead_letters = 0;
  };

  // Stops everything cleanly (SIGTERM) and counts what B's handler did.
  Tally finish() {
    CHECK(relay_->end(SIGTERM) == 0);
    CHECK(ingester_->end(SIGTERM) == 0);
    worker_->stop();
    SQLite::Database b = open_database(b_path());
    Tally tally;
    tally.events = produced_;
    const long long rows = b.execAndGet("SELECT COUNT(*) FROM applied").getInt64();
    const long long distinct =
        b.execAndGet("SELECT COUNT(DISTINCT event_id) FROM applied").getInt64();
    tally.lost = produced_ - distinct;
    tally.double_applied = rows - distinct;
    std::map<std::string, long long> last;
    SQLite::Statement rows_in_order(b, "SELECT key, key_seq FROM applied ORDER BY n");
    while (rows_in_order.executeStep()) {
      const std::string key = rows_in_order.getColumn(0).getString();
      const long long key_seq = rows_in_order.getColumn(1).getInt64();
      auto found = last.find(key);
      if (found != last.end() && key_seq <= found->second) ++tally.out_of_key_order;
      last[key] = key_seq;
    }
    SQLite::Database a = open_database(a_path());
    tally.dead_letters =
        static_cast<long long>(list_dead_letters(a, {}).size() + list_dead_letters(b, {}).size());
    return tally;
  }

  int ingester_crashes() const { return ingester_crashes_; }

 private:
  TempDir dir_;
  std::string urls_;
  int replicas_;
  long long produced_ = 0;
  std::map<std::string, long long> key_seq_;
  std::unique_ptr<std::ofstream> app_log_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<ChildProcess> relay_;
  std::unique_ptr<ChildProcess> ingester_;
  int ingester_crashes_ = 0;
};

void report(const char* scenario, const Pipeline::Tally& tally) {
  MESSAGE(std::string(scenario) << ": events " << tally.events << ", lost " << tally.lost
                                << ", double-applied " << tally.double_applied
                                << ", out of key order " << tally.out_of_key_order
                                << ", dead letters " << tally.dead_letters);
}

}  // namespace

TEST_CASE(
    "10,500 events reach B exactly once and in key order across relay, broker and ingester "
    "crashes and a broker outage") {
  NatsServerProcess server;
  Pipeline pipeline(server.url());
  std::mt19937 random(std::random_device{}());
  auto moment = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(random);
  };

  pipeline.produce(10'000);
  pipeline.start_application();
  pipeline.start_relay();
  // The ingester aborts between a local commit and its acks on its 6th batch.
  pipeline.start_ingester({{"SLUICE_CRASH_AT", "ingest-before-ack:6"}});

  for (int kill = 0; kill < 3; ++kill) {
    const int at = moment(500 + kill * 1500, 1500 + kill * 1500);
    INFO("relay SIGKILL at " << at << " applied");
    REQUIRE(pipeline.wait_applied(at));
    pipeline.relay().end(SIGKILL);
    pipeline.start_relay();
  }

  const int broker_kill_at = moment(5000, 6000);
  INFO("nats-server SIGKILL at " << broker_kill_at << " applied");
  REQUIRE(pipeline.wait_applied(broker_kill_at));
  server.kill_hard();
  server.start();

  const int outage_at = moment(7000, 8000);
  INFO("nats-server outage at " << outage_at << " applied");
  REQUIRE(pipeline.wait_applied(outage_at));
  server.stop();
  // The relay may have published all it had by now: the app writes on during the outage.
  pipeline.produce(500);
  REQUIRE(wait_until([&] { return file_contains(pipeline.relay_log(), "broker unavailable"); },
                     std::chrono::seconds(60)));
  server.start();

  REQUIRE(pipeline.wait_applied(10'500));
  CHECK(pipeline.ingester_crashes() >= 1);
  const auto tally = pipeline.finish();
  report("single server", tally);
  CHECK(tally.lost == 0);
  CHECK(tally.double_applied == 0);
  CHECK(tally.out_of_key_order == 0);
  CHECK(tally.dead_letters == 0);
}

TEST_CASE("a 3-node cluster with a 3-replica stream loses nothing when a node stops mid-run") {
  NatsCluster cluster;
  Pipeline pipeline(cluster.urls(), 3);
  pipeline.produce(5'000);
  pipeline.start_application();
  pipeline.start_relay();
  pipeline.start_ingester();
  REQUIRE(pipeline.wait_applied(1'500));
  // The clients are connected to the first node: stopping it makes them fail over.
  cluster.node(0).stop();
  REQUIRE(pipeline.wait_applied(5'000));
  const auto tally = pipeline.finish();
  report("cluster", tally);
  CHECK(tally.lost == 0);
  CHECK(tally.double_applied == 0);
  CHECK(tally.out_of_key_order == 0);
  CHECK(tally.dead_letters == 0);
}
