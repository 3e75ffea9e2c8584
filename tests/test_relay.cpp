// The relay against a real nats-server: what it publishes, when it marks an event relayed, and
// how it treats a broker that is down or refuses an event.
#include <SQLiteCpp/Transaction.h>
#include <doctest/doctest.h>

#include <map>
#include <thread>

#include "nats/jetstream_client.hpp"
#include "nats/message_headers.hpp"
#include "nats/pull_consumer.hpp"
#include "nats_server_process.hpp"
#include "recording_sink.hpp"
#include "sluice/relay.hpp"
#include "sluice/sluice.hpp"
#include "support/promtool.hpp"
#include "write_lock_holder.hpp"

using namespace sluice;
using sluice::testing::NatsServerProcess;
using sluice::testing::RecordingSink;
using sluice::testing::TempDir;

namespace {

RelayOptions relay_options(const NatsServerProcess& server) {
  RelayOptions options;
  options.nats_url = server.url();
  options.stream = "EVENTS";
  options.topics = {"order.placed", "order.paid"};
  options.subject_prefix = "sluice";
  options.ack_timeout = std::chrono::seconds(2);
  return options;
}

ConsumerStats relay_stats(SQLite::Database& db) {
  for (const auto& stats : consumer_stats(db))
    if (stats.consumer == "nats-relay") return stats;
  FAIL("no relay consumer in the file");
  return {};
}

std::vector<nats::FetchedMessage> read_stream(nats::JetStreamClient& client,
                                              nats::PullConsumer& reader, std::size_t count) {
  std::vector<nats::FetchedMessage> messages;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (messages.size() < count && std::chrono::steady_clock::now() < deadline) {
    for (auto& message :
         reader.fetch(static_cast<int>(count - messages.size()), std::chrono::milliseconds(500)))
      messages.push_back(std::move(message));
  }
  (void)client;
  return messages;
}

std::string header(const nats::FetchedMessage& message, const char* name) {
  const char* value = nullptr;
  natsMsgHeader_Get(message.get(), name, &value);
  return value == nullptr ? "" : value;
}

}  // namespace

TEST_CASE("the relay publishes each event with its ID, headers, key and topic, then marks it") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox outbox(db);
  NewEvent placed{.topic = "order.placed",
                  .payload = R"({"order":1})",
                  .headers = {{"traceparent", "00-abc-01"}},
                  .key = "order-1"};
  NewEvent paid{.topic = "order.paid",
                .payload = R"({"order":1})",
                .key = "order-1",
                .dedup_key = "order-1:paid"};
  const std::string placed_id = outbox.enqueue_now(placed).id;
  const std::string paid_id = outbox.enqueue_now(paid).id;

  Relay relay(dir.file("a.db"), relay_options(server));
  relay.run_until_idle();
  CHECK(relay.counters().published == 2);
  const ConsumerStats stats = relay_stats(db);
  CHECK(stats.pending == 0);
  CHECK(stats.dead == 0);

  nats::JetStreamClient client({.url = server.url()});
  nats::PullConsumer reader(client, {.stream = "EVENTS", .durable = "check"});
  auto messages = read_stream(client, reader, 2);
  REQUIRE(messages.size() == 2);
  CHECK(std::string(natsMsg_GetSubject(messages[0].get())) == "sluice.order.placed");
  CHECK(header(messages[0], "Nats-Msg-Id") == placed_id);
  CHECK(header(messages[0], "Sluice-Topic") == "order.placed");
  CHECK(header(messages[0], "Sluice-Key") == "order-1");
  CHECK(header(messages[0], "traceparent") == "00-abc-01");
  CHECK(std::string(natsMsg_GetData(messages[0].get()), natsMsg_GetDataLength(messages[0].get())) ==
        R"({"order":1})");
  CHECK(std::string(natsMsg_GetSubject(messages[1].get())) == "sluice.order.paid");
  CHECK(header(messages[1], "Nats-Msg-Id") == paid_id);
  CHECK(header(messages[1], "Sluice-Dedup-Key") == "order-1:paid");
  // The time the event was created in this file travels, so that lag on the far side counts
  // from it and not from the ingest.
  CHECK(header(messages[0], "Sluice-Created-At") ==
        std::to_string(find_event(db, placed_id).created_at.time_since_epoch().count()));
}

TEST_CASE("an event the broker refuses for good is dead-lettered with the broker's reason") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox outbox(db);
  outbox.enqueue_now({.topic = "order.placed", .key = "k"});
  outbox.enqueue_now({.topic = "order.paid", .key = "other"});
  outbox.enqueue_now({.topic = "order.paid", .headers = {{"Nats-Expected-Stream", "X"}}});
  outbox.enqueue_now({.topic = "order.paid", .headers = {{"note", "two\nlines"}}});

  RelayOptions options = relay_options(server);
  options.subject_for = [](const Event& e) {
    return e.topic == "order.placed" ? std::string("unrouted.placed") : "sluice." + e.topic;
  };
  Relay relay(dir.file("a.db"), options);
  relay.run_until_idle();

  auto dead = list_dead_letters(db, {});
  REQUIRE(dead.size() == 3);
  CHECK(dead[0].reason == "permanent");
  CHECK(dead[0].last_error.find("no JetStream stream takes subject 'unrouted.placed'") !=
        std::string::npos);
  CHECK(dead[1].last_error.find("reserved prefix") != std::string::npos);
  CHECK(dead[2].last_error.find("line break") != std::string::npos);
  CHECK(relay.counters().rejected == 3);
  CHECK(relay.counters().published == 1);
  CHECK(relay_stats(db).pending == 0);
}

TEST_CASE("header bytes reach the ingesting side byte for byte, or the relay refuses naming them") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox outbox(db);
  const Headers carried = {{"caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80"},
                           {"inner", "a b\tc"},
                           {"ascii", "plain"}};
  const std::string carried_id =
      outbox.enqueue_now({.topic = "order.placed", .headers = carried}).id;
  const std::vector<std::pair<Headers, std::string>> refused = {
      {{{"nul", std::string("a\0b", 3)}}, "header 'nul' has a NUL byte in its value"},
      {{{"lead", " padded"}}, "header 'lead' has white space at the start or end of its value"},
      {{{"trail", "padded\t"}}, "header 'trail' has white space at the start or end of its value"},
      // libnats 3.4 looks a header up by comparing only the length of the name looked for: of
      // two names where one begins the other, one was sent with the other's value, or not at all.
      {{{"X-Fo", "1"}, {"X-Foobar", "2"}}, "header names 'X-Fo' and 'X-Foobar'"},
      {{{"Nats", "1"}}, "header names 'Nats' and 'Nats-Msg-Id'"},
      {{{"Sluice", "1"}}, "header names 'Sluice' and 'Sluice-Topic'"},
  };
  for (const auto& [headers, reason] : refused)
    outbox.enqueue_now({.topic = "order.paid", .headers = headers});

  Relay relay(dir.file("a.db"), relay_options(server));
  relay.run_until_idle();
  CHECK(relay.counters().published == 1);
  const auto dead = list_dead_letters(db, {});
  REQUIRE(dead.size() == refused.size());
  for (std::size_t i = 0; i < refused.size(); ++i) {
    CAPTURE(refused[i].second);
    CHECK(dead[i].last_error.find(refused[i].second) != std::string::npos);
  }

  nats::JetStreamClient client({.url = server.url()});
  nats::PullConsumer reader(client, {.stream = "EVENTS", .durable = "check"});
  auto messages = read_stream(client, reader, 1);
  REQUIRE(messages.size() == 1);
  NewEvent arrived;
  nats::event_from_message(messages[0].get(), arrived);
  CHECK(arrived.id == carried_id);
  CHECK(arrived.headers == carried);
}

TEST_CASE("while the broker is down events wait without spending attempts, then all arrive") {
  NatsServerProcess server;
  TempDir dir;
  auto clock = std::make_shared<ManualClock>();
  auto sink = std::make_shared<RecordingSink>();
  Options options{.clock = clock, .log = sink};
  SQLite::Database db = open_database(dir.file("a.db"), options);
  Outbox outbox(db, options);

  Relay relay(dir.file("a.db"), relay_options(server), options);
  server.stop();
  for (int i = 0; i < 20; ++i)
    outbox.enqueue_now({.topic = "order.placed", .key = "k" + std::to_string(i % 3)});

  for (int round = 0; round < 3; ++round) {
    relay.run_until_idle();
    clock->advance(std::chrono::minutes(1));
  }
  ConsumerStats stats = relay_stats(db);
  CHECK(stats.dead == 0);
  CHECK(stats.delivered_total == 0);
  CHECK(stats.pending == 20);
  CHECK(relay.counters().broker_errors > 0);
  CHECK(sink->count(LogLevel::kWarn) > 0);
  for (const auto& status : delivery_statuses(db, find_event(db, list_events(db, {}).front().id)))
    if (status.consumer == "nats-relay") CHECK(status.attempts == 0);

  server.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (relay_stats(db).delivered_total < 20 && std::chrono::steady_clock::now() < deadline) {
    clock->advance(std::chrono::minutes(1));
    relay.run_until_idle();
    if (relay_stats(db).delivered_total < 20)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stats = relay_stats(db);
  CHECK(stats.delivered_total == 20);
  CHECK(stats.dead == 0);
  CHECK(list_dead_letters(db, {}).empty());
}

TEST_CASE("keyed events reach the stream in key order, with many acks outstanding") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox outbox(db);
  std::map<std::string, int> next_n;
  {
    SQLite::Transaction tx(db);
    for (int i = 0; i < 600; ++i) {
      std::string key = "k" + std::to_string(i % 7);
      outbox.enqueue({.topic = "order.placed",
                      .payload = "{\"n\":" + std::to_string(next_n[key]++) + "}",
                      .key = key});
    }
    tx.commit();
  }
  RelayOptions options = relay_options(server);
  options.max_outstanding_acks = 32;
  Relay relay(dir.file("a.db"), options);
  relay.run_until_idle();
  CHECK(relay.counters().published == 600);
  CHECK(relay_stats(db).delivered_total == 600);

  nats::JetStreamClient client({.url = server.url()});
  nats::PullConsumer reader(client, {.stream = "EVENTS", .durable = "check"});
  auto messages = read_stream(client, reader, 600);
  REQUIRE(messages.size() == 600);
  std::map<std::string, int> seen_n;
  int out_of_order = 0;
  for (const auto& message : messages) {
    std::string key = header(message, "Sluice-Key");
    std::string body(natsMsg_GetData(message.get()), natsMsg_GetDataLength(message.get()));
    int n = std::stoi(body.substr(5));
    if (seen_n.count(key) && n != seen_n[key] + 1) ++out_of_order;
    seen_n[key] = n;
  }
  CHECK(out_of_order == 0);
}

TEST_CASE(
    "a relay whose consumer name has quotes and backslashes connects, and its metrics pass "
    "promtool") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox outbox(db);
  for (int i = 0; i < 3; ++i) outbox.enqueue_now({.topic = "order.placed"});
  RelayOptions options = relay_options(server);
  options.consumer = "relay \"east\" \\ 2";
  Relay relay(dir.file("a.db"), options);
  relay.run_until_idle();
  CHECK(relay.counters().published == 3);
  const std::string text = relay.metrics_text();
  for (const char* name : {"sluice_relay_published_total", "sluice_relay_duplicates_total",
                           "sluice_relay_broker_errors_total", "sluice_relay_rejected_total"}) {
    CHECK(text.find(std::string("# HELP ") + name + " ") != std::string::npos);
  }
  CHECK(text.find("sluice_relay_published_total{consumer=\"relay \\\"east\\\" \\\\ 2\"} 3\n") !=
        std::string::npos);
  const auto promtool = sluice::test::promtool_check_metrics(metrics_text(db) + text);
  INFO(promtool.out << promtool.err);
  CHECK(promtool.exit_code == 0);
}

TEST_CASE("a started relay survives another process holding the file's write lock") {
  NatsServerProcess server;
  TempDir dir;
  auto sink = std::make_shared<RecordingSink>();
  Options options{.busy_timeout = std::chrono::milliseconds(50), .log = sink};
  SQLite::Database db = open_database(dir.file("a.db"), options);
  Outbox outbox(db, options);
  for (int i = 0; i < 10; ++i) outbox.enqueue_now({.topic = "order.placed", .key = "k"});
  Relay relay(dir.file("a.db"), relay_options(server), options);
  sluice::testing::WriteLockHolder lock(dir.file("a.db"), dir.file("python.log"));
  relay.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (sink->count(LogLevel::kError) < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(sink->count(LogLevel::kError) >= 2);  // it backed off and tried again
  lock.release();
  while (relay_stats(db).delivered_total < 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  relay.stop();
  CHECK(relay_stats(db).delivered_total == 10);
  CHECK(relay.counters().published == 10);
}
