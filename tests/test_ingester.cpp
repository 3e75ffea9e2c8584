// The ingester against a real nats-server: IDs from Nats-Msg-Id, acks after the local commit,
// duplicates without effect, stream order kept after an ingester died holding messages.
#include <doctest/doctest.h>

#include <cstdio>
#include <deque>

#include "nats/jetstream_client.hpp"
#include "nats/message_headers.hpp"
#include "nats/pull_consumer.hpp"
#include "nats_server_process.hpp"
#include "recording_sink.hpp"
#include "sluice/ingester.hpp"
#include "sluice/sluice.hpp"
#include "support/promtool.hpp"
#include "write_lock_holder.hpp"

using namespace sluice;
using sluice::testing::NatsServerProcess;
using sluice::testing::RecordingSink;
using sluice::testing::TempDir;

namespace {

constexpr const char* kStream = "EVENTS";

// When relayed-looking event `i` was created in the file it was relayed from.
TimePoint created_at(int i) { return TimePoint(Duration(1'700'000'000'000 + i)); }

// A W3C traceparent of its own for event `i`: the ingester keeps it as the relay sent it.
std::string traceparent(int i) {
  char text[64];
  std::snprintf(text, sizeof text, "00-%032x-00f067aa0ba902b7-01", i + 1);
  return text;
}

// Publishes `count` relayed-looking events "id-<first>".. on sluice.order.placed.
void publish_events(nats::JetStreamClient& client, int first, int count) {
  std::deque<Event> events;  // what the messages view; a deque's elements stay where they are
  std::deque<std::string> header_texts;
  std::vector<nats::OutgoingMessage> messages;
  for (int i = first; i < first + count; ++i) {
    Event& event = events.emplace_back();
    event.id = "id-" + std::to_string(1000000 + i);
    event.topic = "order.placed";
    event.key = "k" + std::to_string(i % 5);
    event.payload = "{\"i\":" + std::to_string(i) + "}";
    event.headers = {{"traceparent", traceparent(i)}};
    event.created_at = created_at(i);
    nats::OutgoingMessage& message =
        messages.emplace_back("sluice.order.placed", event.id, event.payload);
    nats::message_headers(event, message.headers, header_texts);
  }
  for (const auto& outcome : client.publish(messages, std::chrono::seconds(5)))
    REQUIRE(outcome.acknowledged());
}

IngesterOptions ingester_options(const NatsServerProcess& server, const std::string& durable) {
  IngesterOptions options;
  options.nats_url = server.url();
  options.stream = kStream;
  options.durable = durable;
  options.fetch_batch = 16;
  options.fetch_wait = std::chrono::milliseconds(300);
  return options;
}

IngestResult poll_until(Ingester& ingester, long long wanted) {
  IngestResult total;
  for (int polls = 0; polls < 100 && total.received + total.duplicates < wanted; ++polls) {
    IngestResult step = ingester.poll();
    total.received += step.received;
    total.duplicates += step.duplicates;
  }
  return total;
}

// Messages the durable delivered and has not had acknowledged.
std::uint64_t ack_pending(nats::JetStreamClient& client, const std::string& durable) {
  jsConsumerInfo* info = nullptr;
  REQUIRE(js_GetConsumerInfo(&info, client.jetstream(), kStream, durable.c_str(), nullptr,
                             nullptr) == NATS_OK);
  const std::uint64_t pending = static_cast<std::uint64_t>(info->NumAckPending);
  jsConsumerInfo_Destroy(info);
  return pending;
}

struct Broker {
  NatsServerProcess server;
  nats::JetStreamClient client{{.url = server.url()}};
  Broker() { client.ensure_stream({.name = kStream, .subjects = {"sluice.>"}}); }
};

}  // namespace

TEST_CASE("a message read into the event of the one before keeps nothing of that event") {
  // No client here to open the library, which messages need.
  REQUIRE(nats_Open(-1) == NATS_OK);
  auto message = [](const std::vector<std::pair<const char*, const char*>>& headers) {
    natsMsg* m = nullptr;
    REQUIRE(natsMsg_Create(&m, "sluice.t", nullptr, "{}", 2) == NATS_OK);
    for (const auto& [name, value] : headers) REQUIRE(natsMsgHeader_Set(m, name, value) == NATS_OK);
    return m;
  };
  natsMsg* first = message({{"Nats-Msg-Id", "e-1"},
                            {"Sluice-Topic", "t"},
                            {"Sluice-Key", "k"},
                            {"Sluice-Dedup-Key", "d"},
                            {"Sluice-Not-Before", "5"},
                            {"Sluice-Created-At", "7"},
                            {"Sluice-Version", "3"},
                            {"a", "1"},
                            {"b", "2"}});
  natsMsg* second =
      message({{"Nats-Msg-Id", "e-2"}, {"Sluice-Topic", "t"}, {"b", "3"}, {"c", "4"}});
  NewEvent event;
  nats::event_from_message(first, event);
  CHECK(event.headers == Headers{{"a", "1"}, {"b", "2"}});
  CHECK(event.not_before == TimePoint(Duration(5)));
  CHECK(event.created_at == TimePoint(Duration(7)));
  CHECK(event.version == 3);
  nats::event_from_message(second, event);
  CHECK(event.version == 1);
  CHECK(event.id == "e-2");
  CHECK(event.key.empty());
  CHECK(event.dedup_key.empty());
  CHECK_FALSE(event.not_before.has_value());
  CHECK_FALSE(event.created_at.has_value());
  CHECK(event.headers == Headers{{"b", "3"}, {"c", "4"}});
  natsMsg_Destroy(first);
  natsMsg_Destroy(second);
}

// libnats's constructor of a received message (its msg.h, exported by libnats 3.x): a message
// with the header bytes a broker delivered, which natsMsgHeader_Set cannot make.
extern "C" natsStatus natsMsg_create(natsMsg** newMsg, const char* subject, int subjLen,
                                     const char* reply, int replyLen, const char* buf, int bufLen,
                                     int hdrLen);

// Found by the nats_message fuzz target. libnats 3.4 looks a header up by comparing only the
// length of the name looked for, so "X-Fo" finds "X-Foobar" (when their hashes meet, as these do).
TEST_CASE("header names where one begins another are decoded exactly or refused, never merged") {
  REQUIRE(nats_Open(-1) == NATS_OK);
  auto message = [](const std::vector<std::pair<const char*, const char*>>& headers) {
    natsMsg* m = nullptr;
    REQUIRE(natsMsg_Create(&m, "sluice.t", nullptr, "{}", 2) == NATS_OK);
    for (const auto& [name, value] : headers) REQUIRE(natsMsgHeader_Set(m, name, value) == NATS_OK);
    return m;
  };
  // A header of the event before whose name begins one of this message's is not carried over.
  natsMsg* first = message({{"Nats-Msg-Id", "e-1"}, {"Sluice-Topic", "t"}, {"X-Fo", "1"}});
  natsMsg* second = message({{"Nats-Msg-Id", "e-2"}, {"Sluice-Topic", "t"}, {"X-Foobar", "2"}});
  NewEvent event;
  nats::event_from_message(first, event);
  CHECK(event.headers == Headers{{"X-Fo", "1"}});
  nats::event_from_message(second, event);
  CHECK(event.headers == Headers{{"X-Foobar", "2"}});
  natsMsg_Destroy(first);
  natsMsg_Destroy(second);

  // Both names in one message, in either order: libnats keeps one of them with both values.
  for (const std::string order : {"X-Foobar: 2\r\nX-Fo: 1", "X-Fo: 1\r\nX-Foobar: 2"}) {
    CAPTURE(order);
    const std::string header =
        "NATS/1.0\r\nNats-Msg-Id: e-3\r\nSluice-Topic: t\r\n" + order + "\r\n\r\n";
    const std::string buffer = header + "{}";
    natsMsg* m = nullptr;
    REQUIRE(natsMsg_create(&m, "sluice.t", 8, nullptr, 0, buffer.data(),
                           static_cast<int>(buffer.size()),
                           static_cast<int>(header.size())) == NATS_OK);
    NewEvent decoded;
    CHECK_THROWS_WITH_AS(nats::event_from_message(m, decoded), doctest::Contains("X-Fo"),
                         InvalidArgument);
    natsMsg_Destroy(m);
  }
}

TEST_CASE(
    "a Sluice-Not-Before or -Created-At that is not a time in ms makes the message malformed") {
  REQUIRE(nats_Open(-1) == NATS_OK);
  for (const char* header : {"Sluice-Not-Before", "Sluice-Created-At"})
    for (const char* bad :
         {"tomorrow", "12abc", " 5", "soon", "99999999999999999999", "-99999999999999999999"}) {
      CAPTURE(header);
      CAPTURE(bad);
      natsMsg* m = nullptr;
      REQUIRE(natsMsg_Create(&m, "sluice.t", nullptr, "{}", 2) == NATS_OK);
      REQUIRE(natsMsgHeader_Set(m, "Nats-Msg-Id", "e-1") == NATS_OK);
      REQUIRE(natsMsgHeader_Set(m, "Sluice-Topic", "t") == NATS_OK);
      REQUIRE(natsMsgHeader_Set(m, header, bad) == NATS_OK);
      NewEvent event;
      CHECK_THROWS_WITH_AS(nats::event_from_message(m, event), doctest::Contains(header),
                           InvalidArgument);
      natsMsg_Destroy(m);
    }
}

TEST_CASE("each message is received with the ID from Nats-Msg-Id and acked after the commit") {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, 40);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  IngestResult result = poll_until(ingester, 40);
  CHECK(result.received == 40);
  CHECK(result.duplicates == 0);

  SQLite::Database db = open_database(dir.file("b.db"));
  auto events = list_events(db, {.limit = 100});
  REQUIRE(events.size() == 40);
  CHECK(events[0].id == "id-1000000");
  CHECK(events[0].topic == "order.placed");
  CHECK(events[0].key == "k0");
  CHECK(events[0].payload == R"({"i":0})");
  CHECK(events[0].headers == Headers{{"traceparent", traceparent(0)}});
  // Created when the relayed-from file created it, not when ingested: lag counts from there.
  CHECK(events[0].created_at == created_at(0));
  CHECK(events[39].id == "id-1000039");
  CHECK(events[39].created_at == created_at(39));

  nats::PullConsumer same_durable(broker.client, {.stream = kStream, .durable = "b"});
  CHECK(same_durable.fetch(100, std::chrono::milliseconds(300)).empty());
}

TEST_CASE("after each commit nothing fetched is left unacknowledged, one ack per batch") {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, 40);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  CHECK(ingester.poll().received == 16);
  CHECK(ack_pending(broker.client, "b") == 0);
  CHECK(poll_until(ingester, 24).received == 24);
  CHECK(ack_pending(broker.client, "b") == 0);
}

TEST_CASE("a durable made with AckExplicit by an older sluice has each message acknowledged") {
  Broker broker;
  TempDir dir;
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = "old";
  config.AckPolicy = js_AckExplicit;
  REQUIRE(js_AddConsumer(nullptr, broker.client.jetstream(), kStream, &config, nullptr, nullptr) ==
          NATS_OK);
  publish_events(broker.client, 0, 40);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "old"));
  CHECK(poll_until(ingester, 40).received == 40);
  CHECK(ack_pending(broker.client, "old") == 0);
}

TEST_CASE("a message whose event the file already has is acknowledged without effect") {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, 25);
  Ingester first(dir.file("b.db"), ingester_options(broker.server, "one"));
  CHECK(poll_until(first, 25).received == 25);
  Ingester second(dir.file("b.db"), ingester_options(broker.server, "two"));
  IngestResult again = poll_until(second, 25);
  CHECK(again.received == 0);
  CHECK(again.duplicates == 25);
  SQLite::Database db = open_database(dir.file("b.db"));
  CHECK(list_events(db, {.limit = 100}).size() == 25);
}

TEST_CASE("messages an ingester fetched and never committed come back first, in stream order") {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, 10);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  CHECK(poll_until(ingester, 10).received == 10);

  publish_events(broker.client, 10, 30);
  {
    // A crashed ingester: it fetched 11..20 and died before its commit.
    nats::PullConsumer crashed(broker.client, {.stream = kStream, .durable = "b"});
    REQUIRE(crashed.fetch(10, std::chrono::seconds(2)).size() == 10);
  }
  poll_until(ingester, 30);
  SQLite::Database db = open_database(dir.file("b.db"));
  auto events = list_events(db, {.limit = 100});
  REQUIRE(events.size() == 40);
  for (int i = 0; i < 40; ++i) CHECK(events[i].id == "id-" + std::to_string(1000000 + i));
}

namespace {

// Publishes `before` events, the one `refused` message, then `after` events; an ingester must
// store every event but that one, terminate it alone, and count it malformed.
void expect_terminated_alone(const nats::OutgoingMessage& refused, int before, int after) {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, before);
  REQUIRE(
      broker.client.publish(std::vector<nats::OutgoingMessage>{refused}, std::chrono::seconds(5))
          .front()
          .acknowledged());
  publish_events(broker.client, before, after);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  poll_until(ingester, before + after);
  CHECK(ingester.counters().received == before + after);
  CHECK(ingester.counters().malformed == 1);
  SQLite::Database db = open_database(dir.file("b.db"));
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_events").getInt() == before + after);
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_events WHERE id = '" +
                      std::string(refused.msg_id) + "'")
            .getInt() == 0);
}

}  // namespace

TEST_CASE("a message that is not a sluice event is terminated and the rest still ingested") {
  expect_terminated_alone({"sluice.stray", "stray-1", "hello", {}}, 3, 3);
}

TEST_CASE("an event sluice refuses is terminated alone; the rest of its fetch is stored") {
  // A sluice event in form whose payload is not JSON: refused when stored, not when read.
  expect_terminated_alone(
      {"sluice.order.placed", "bad-1", "not json", {{"Sluice-Topic", "order.placed"}}}, 3, 3);
}

TEST_CASE("a message whose headers are not UTF-8 is terminated alone, not stored altered") {
  expect_terminated_alone({"sluice.order.placed",
                           "bad-1",
                           "{}",
                           {{"Sluice-Topic", "order.placed"}, {"trace", "\xFF\xFE-abc"}}},
                          2, 2);
}

TEST_CASE("a started ingester keeps ingesting across a broker restart") {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, 50);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  ingester.start();
  SQLite::Database db = open_database(dir.file("b.db"));
  auto wait_for = [&](std::size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (list_events(db, {.limit = 1000}).size() < count &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return list_events(db, {.limit = 1000}).size();
  };
  CHECK(wait_for(50) == 50);
  broker.server.kill_hard();
  broker.server.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (!broker.client.connected() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  publish_events(broker.client, 50, 50);
  CHECK(wait_for(100) == 100);
  ingester.stop();
}

TEST_CASE("malformed messages are terminated at the broker, which announces each one") {
  Broker broker;
  TempDir dir;
  natsSubscription* advisories = nullptr;
  REQUIRE(natsConnection_SubscribeSync(&advisories, broker.client.connection(),
                                       "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.EVENTS.b") ==
          NATS_OK);
  publish_events(broker.client, 0, 2);
  const std::vector<nats::OutgoingMessage> malformed = {
      {"sluice.stray", "stray-1", "hello", {}},
      {"sluice.order.placed",
       "late-1",
       "{}",
       {{"Sluice-Topic", "order.placed"}, {"Sluice-Not-Before", "tomorrow"}}}};
  for (const auto& outcome : broker.client.publish(malformed, std::chrono::seconds(5)))
    REQUIRE(outcome.acknowledged());
  publish_events(broker.client, 2, 2);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  poll_until(ingester, 4);
  CHECK(ingester.counters().received == 4);
  CHECK(ingester.counters().malformed == 2);
  int announced = 0;
  natsMsg* advisory = nullptr;
  while (announced < 2 && natsSubscription_NextMsg(&advisory, advisories, 5000) == NATS_OK) {
    ++announced;
    natsMsg_Destroy(advisory);
  }
  CHECK(announced == 2);
  natsSubscription_Destroy(advisories);
  SQLite::Database db = open_database(dir.file("b.db"));
  CHECK(db.execAndGet("SELECT count(*) FROM sluice_events WHERE id = 'late-1'").getInt() == 0);
  CHECK(ack_pending(broker.client, "b") == 0);
}

TEST_CASE("an ingester's metrics say how far it is behind the stream, and pass promtool") {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, 40);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  CHECK(ingester.poll().received == 16);
  const std::string text = ingester.metrics_text();
  CHECK(text.find("sluice_ingest_pending_messages{stream=\"EVENTS\",durable=\"b\"} 24\n") !=
        std::string::npos);
  CHECK(text.find("sluice_ingest_received_total{stream=\"EVENTS\",durable=\"b\"} 16\n") !=
        std::string::npos);
  const auto promtool = sluice::test::promtool_check_metrics(text);
  INFO(promtool.out << promtool.err);
  CHECK(promtool.exit_code == 0);
  poll_until(ingester, 24);
  CHECK(ingester.poll().received == 0);
  CHECK(ingester.metrics_text().find(
            "sluice_ingest_pending_messages{stream=\"EVENTS\",durable=\"b\"} 0\n") !=
        std::string::npos);
}

TEST_CASE("a started ingester survives another process holding the file's write lock") {
  Broker broker;
  TempDir dir;
  auto sink = std::make_shared<RecordingSink>();
  Options options;
  options.busy_timeout = std::chrono::milliseconds(50);
  options.log = sink;
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"), options);
  publish_events(broker.client, 0, 20);
  sluice::testing::WriteLockHolder lock(dir.file("b.db"), dir.file("python.log"));
  ingester.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (sink->count(LogLevel::kWarn) < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(sink->count(LogLevel::kWarn) >= 2);  // it backed off and tried again
  lock.release();
  SQLite::Database db = open_database(dir.file("b.db"));
  while (list_events(db, {.limit = 100}).size() < 20 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ingester.stop();
  CHECK(list_events(db, {.limit = 100}).size() == 20);
}

TEST_CASE("poll() on a started ingester is refused; stop() then poll() ingests") {
  Broker broker;
  TempDir dir;
  publish_events(broker.client, 0, 5);
  Ingester ingester(dir.file("b.db"), ingester_options(broker.server, "b"));
  ingester.start();
  CHECK_THROWS_WITH_AS(ingester.poll(), doctest::Contains("refused, the ingester is started"),
                       InvalidArgument);
  ingester.stop();
  publish_events(broker.client, 5, 5);
  SQLite::Database db = open_database(dir.file("b.db"));
  // However many the started ingester stored before stop(), polls take the rest.
  for (int polls = 0; polls < 100 && list_events(db, {.limit = 100}).size() < 10; ++polls) {
    ingester.poll();
  }
  CHECK(list_events(db, {.limit = 100}).size() == 10);
}
