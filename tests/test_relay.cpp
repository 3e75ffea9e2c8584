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
  NewEvent placed{
      .topic = "order.placed",
      .payload = R"({"order":1})",
      .headers = {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
      .key = "order-1"};
  NewEvent paid{.topic = "order.paid",
                .payload = R"({"order":1})",
                .key = "order-1",
                .dedup_key = "order-1:paid",
                .version = 2};
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
  CHECK(header(messages[0], "traceparent") ==
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  CHECK(std::string(natsMsg_GetData(messages[0].get()), natsMsg_GetDataLength(messages[0].get())) ==
        R"({"order":1})");
  CHECK(std::string(natsMsg_GetSubject(messages[1].get())) == "sluice.order.paid");
  CHECK(header(messages[1], "Nats-Msg-Id") == paid_id);
  CHECK(header(messages[1], "Sluice-Dedup-Key") == "order-1:paid");
  CHECK(header(messages[1], "Sluice-Version") == "2");
  // Version 1 goes without the header, as an older relay sent it.
  CHECK(header(messages[0], "Sluice-Version").empty());
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

TEST_CASE("events alternating between the relay's topics go out in one batch, in key order") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox outbox(db);
  {
    SQLite::Transaction tx(db);
    for (int i = 0; i < 200; ++i)
      outbox.enqueue({.topic = i % 2 == 0 ? "order.placed" : "order.paid",
                      .key = "order-" + std::to_string(i / 2)});
    tx.commit();
  }
  Relay relay(dir.file("a.db"), relay_options(server));
  relay.run_until_idle();
  CHECK(relay.counters().published == 200);
  // Half the default claim of 512 holds them all: one batch and one commit, where a batch ending
  // at every change of topic made it 200.
  CHECK(relay.counters().batches == 1);
  CHECK(relay_stats(db).delivered_total == 200);

  nats::JetStreamClient client({.url = server.url()});
  nats::PullConsumer reader(client, {.stream = "EVENTS", .durable = "check"});
  auto messages = read_stream(client, reader, 200);
  REQUIRE(messages.size() == 200);
  std::map<std::string, std::string> last_subject;
  int out_of_order = 0;
  for (const auto& message : messages) {
    std::string& last = last_subject[header(message, "Sluice-Key")];
    const std::string subject = natsMsg_GetSubject(message.get());
    if (subject != (last.empty() ? "sluice.order.placed" : "sluice.order.paid")) ++out_of_order;
    last = subject;
  }
  CHECK(last_subject.size() == 100);
  CHECK(out_of_order == 0);
}

TEST_CASE("a backlog failing batch after batch waits one retry period, doubled once per retry") {
  TempDir dir;
  auto clock = std::make_shared<ManualClock>();
  // Half of a claim of two: each event is a batch of its own, failing one after the other.
  Options options{.batch_size = 2, .clock = clock};
  SQLite::Database db = open_database(dir.file("a.db"), options);
  Outbox outbox(db, options);
  for (int i = 0; i < 12; ++i) outbox.enqueue_now({.topic = "order.placed"});
  RelayOptions relay_options;
  relay_options.nats_url =
      "nats://127.0.0.1:" + std::to_string(sluice::testing::free_loopback_ports(1)[0]);
  relay_options.stream = "EVENTS";
  relay_options.topics = {"order.placed"};
  Relay relay(dir.file("a.db"), relay_options, options);
  const auto waits = [&] {
    std::vector<Duration> found;
    for (const Event& event : list_events(db, {}))
      for (const auto& status : delivery_statuses(db, event))
        if (status.consumer == "nats-relay" && status.next_attempt_at)
          found.push_back(*status.next_attempt_at - clock->now());
    return found;
  };

  relay.run_until_idle();
  CHECK(relay.counters().batches == 12);
  std::vector<Duration> first = waits();
  REQUIRE(first.size() == 12);
  // Doubling per batch made these 200 ms, 400 ms, ... 30 s.
  for (Duration wait : first) CHECK(wait == std::chrono::milliseconds(200));

  clock->advance(std::chrono::milliseconds(200));
  relay.run_until_idle();
  std::vector<Duration> second = waits();
  REQUIRE(second.size() == 12);
  for (Duration wait : second) CHECK(wait == std::chrono::milliseconds(400));
  CHECK(relay_stats(db).dead == 0);
}

TEST_CASE("events snoozed while the broker is down go out as soon as it is back") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox outbox(db);
  RelayOptions options = relay_options(server);
  // Only the broker's return can end the wait within the test's deadline.
  options.min_backoff = std::chrono::minutes(5);
  options.max_backoff = std::chrono::minutes(5);
  Relay relay(dir.file("a.db"), options);
  server.stop();
  for (int i = 0; i < 10; ++i)
    outbox.enqueue_now({.topic = i % 2 == 0 ? "order.placed" : "order.paid", .key = "k"});
  relay.run_until_idle();
  CHECK(relay_stats(db).delivered_total == 0);
  CHECK(relay_stats(db).pending == 10);

  relay.start();
  server.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (relay_stats(db).delivered_total < 10 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  relay.stop();
  CHECK(relay_stats(db).delivered_total == 10);
  CHECK(relay_stats(db).dead == 0);
}

TEST_CASE("relays with other subject prefixes share one stream: each adds its subjects") {
  NatsServerProcess server;
  TempDir dir;
  SQLite::Database east_db = open_database(dir.file("east.db"));
  SQLite::Database west_db = open_database(dir.file("west.db"));
  RelayOptions east_options = relay_options(server);
  east_options.subject_prefix = "east";
  RelayOptions west_options = relay_options(server);
  west_options.subject_prefix = "west";
  Relay east(dir.file("east.db"), east_options);
  Relay west(dir.file("west.db"), west_options);
  Outbox(east_db).enqueue_now({.topic = "order.placed"});
  Outbox(west_db).enqueue_now({.topic = "order.placed"});
  east.run_until_idle();
  west.run_until_idle();
  // The second relay's start took the stream's subjects: the first box's events were
  // dead-lettered, "no JetStream stream takes subject".
  CHECK(list_dead_letters(east_db, {}).empty());
  CHECK(list_dead_letters(west_db, {}).empty());
  CHECK(east.counters().published == 1);
  CHECK(west.counters().published == 1);
}

namespace {

// The stream's configuration as JetStream holds it, through libnats.
struct StreamConfigView {
  std::vector<std::string> subjects;
  int64_t max_age = 0;
  int64_t max_bytes = 0;
  int64_t duplicates = 0;
};

StreamConfigView stream_config(nats::JetStreamClient& client, const char* name) {
  jsStreamInfo* info = nullptr;
  REQUIRE(js_GetStreamInfo(&info, client.jetstream(), name, nullptr, nullptr) == NATS_OK);
  StreamConfigView view;
  for (int i = 0; i < info->Config->SubjectsLen; ++i)
    view.subjects.emplace_back(info->Config->Subjects[i]);
  view.max_age = info->Config->MaxAge;
  view.max_bytes = info->Config->MaxBytes;
  view.duplicates = info->Config->Duplicates;
  jsStreamInfo_Destroy(info);
  return view;
}

// An operator's stream: subjects "ops.>", a day's max age, 64 MiB, a 30 s duplicate window.
void create_operator_stream(nats::JetStreamClient& client) {
  const char* subjects[] = {"ops.>"};
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = "EVENTS";
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_FileStorage;
  config.MaxAge = int64_t{86400} * 1'000'000'000;
  config.MaxBytes = int64_t{64} << 20;
  config.Duplicates = int64_t{30} * 1'000'000'000;
  REQUIRE(js_AddStream(nullptr, client.jetstream(), &config, nullptr, nullptr) == NATS_OK);
}

}  // namespace

TEST_CASE("a relay starting on an operator's stream adds its subjects and keeps every limit") {
  NatsServerProcess server;
  TempDir dir;
  nats::JetStreamClient client({.url = server.url()});
  create_operator_stream(client);
  SQLite::Database db = open_database(dir.file("a.db"));
  Outbox(db).enqueue_now({.topic = "order.placed"});
  for (int start = 0; start < 2; ++start) {  // a restart changes nothing more
    Relay relay(dir.file("a.db"), relay_options(server));
    relay.run_until_idle();
  }
  CHECK(relay_stats(db).delivered_total == 1);
  const StreamConfigView config = stream_config(client, "EVENTS");
  CHECK(config.subjects == std::vector<std::string>{"ops.>", "sluice.>"});
  // A restart reset these to unlimited and the window to the relay's 2 minutes.
  CHECK(config.max_age == int64_t{86400} * 1'000'000'000);
  CHECK(config.max_bytes == int64_t{64} << 20);
  CHECK(config.duplicates == int64_t{30} * 1'000'000'000);
}

TEST_CASE("with update_stream off a relay changes nothing and waits for the stream's subjects") {
  NatsServerProcess server;
  TempDir dir;
  nats::JetStreamClient client({.url = server.url()});
  create_operator_stream(client);
  auto sink = std::make_shared<RecordingSink>();
  Options options{.log = sink};
  SQLite::Database db = open_database(dir.file("a.db"), options);
  Outbox(db, options).enqueue_now({.topic = "order.placed"});
  RelayOptions verify_only = relay_options(server);
  verify_only.update_stream = false;
  {
    Relay relay(dir.file("a.db"), verify_only, options);
    relay.run_until_idle();
    CHECK(relay.counters().published == 0);
  }
  CHECK(stream_config(client, "EVENTS").subjects == std::vector<std::string>{"ops.>"});
  CHECK(relay_stats(db).pending == 1);
  CHECK(relay_stats(db).dead == 0);
  CHECK(sink->field_contains("does not take subject 'sluice.>'"));
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
                           "sluice_relay_broker_errors_total", "sluice_relay_rejected_total",
                           "sluice_relay_batches_total"}) {
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
