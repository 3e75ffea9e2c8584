#include "relay_bench.hpp"

#include <SQLiteCpp/Transaction.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <thread>

#include "latency_summary.hpp"
#include "nats/jetstream_client.hpp"
#include "nats/message_headers.hpp"
#include "nats_server_process.hpp"
#include "sluice/ingester.hpp"
#include "sluice/relay.hpp"
#include "sluice/sluice.hpp"

namespace sluice::bench {
namespace {

using Clock = std::chrono::steady_clock;

using ::bench::median;

double per_second(long long count, Clock::duration elapsed) {
  return static_cast<double>(count) / std::chrono::duration<double>(elapsed).count();
}

// With `alternate`, every other event is an order.paid.
std::vector<NewEvent> make_events(int count, int keys, bool alternate) {
  std::vector<NewEvent> events;
  for (int i = 0; i < count; ++i) {
    NewEvent event;
    event.topic = alternate && i % 2 == 1 ? "order.paid" : "order.placed";
    event.key = "order-" + std::to_string(i % keys);
    event.payload = "{\"order\":" + std::to_string(i) + ",\"amount_cents\":1999}";
    event.headers = {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}};
    events.push_back(std::move(event));
  }
  return events;
}

// The same messages the relay would send, published by the client alone.
double plain_publish_rate(const std::string& url, const std::vector<NewEvent>& events,
                          const std::string& round) {
  nats::JetStreamClient client({.url = url});
  client.ensure_stream({.name = "BASELINE" + round, .subjects = {"baseline" + round + ".>"}});
  // The messages, in batches of 512, are made before the clock starts: the floor is publishing
  // alone.
  std::deque<Event> sent;  // what the messages view; a deque's elements stay where they are
  std::deque<std::string> texts;
  std::vector<std::vector<nats::OutgoingMessage>> batches;
  for (std::size_t i = 0; i < events.size(); ++i) {
    Event& event = sent.emplace_back();
    event.id = "baseline-" + std::to_string(i);
    event.topic = events[i].topic;
    event.key = events[i].key;
    event.headers = events[i].headers;
    if (i % 512 == 0) batches.emplace_back().reserve(512);
    nats::OutgoingMessage& message = batches.back().emplace_back(
        texts.emplace_back("baseline" + round + "." + event.topic), event.id, events[i].payload);
    nats::message_headers(event, message.headers, texts);
  }
  const auto start = Clock::now();
  for (const auto& batch : batches) {
    for (const auto& outcome : client.publish(batch, std::chrono::seconds(10)))
      if (!outcome.acknowledged())
        throw Error("relay bench: baseline publish failed: " + outcome.error);
  }
  return per_second(static_cast<long long>(events.size()), Clock::now() - start);
}

// Events per second from the relay's start until B holds them all.
double relay_rate(const std::string& url, const testing::TempDir& dir,
                  const std::vector<NewEvent>& new_events, const std::string& round) {
  const long long events = static_cast<long long>(new_events.size());
  const std::string a = dir.file("a" + round + ".db");
  const std::string b = dir.file("b" + round + ".db");
  {
    SQLite::Database db = open_database(a);
    Outbox outbox(db);
    SQLite::Transaction tx(db);
    outbox.enqueue_batch(new_events);
    tx.commit();
  }
  RelayOptions relay_options;
  relay_options.nats_url = url;
  relay_options.stream = "EVENTS" + round;
  relay_options.topics = {"order.placed", "order.paid"};
  relay_options.subject_prefix = "sluice" + round;
  // Bigger claims amortise the relay's commits and key rounds over more publishes: 8192 relayed
  // 11% more than 2048 here. The cost is that a relay killed mid-claim re-publishes up to a claim,
  // which the broker's duplicate window drops.
  Options relay_worker;
  relay_worker.batch_size = 8192;
  Relay relay(a, relay_options, relay_worker);
  IngesterOptions ingester_options;
  ingester_options.nats_url = url;
  ingester_options.stream = "EVENTS" + round;
  ingester_options.durable = "bench";
  Ingester ingester(b, ingester_options);
  SQLite::Database b_db = open_database(b);

  const auto start = Clock::now();
  relay.start();
  ingester.start();
  const auto deadline = start + std::chrono::minutes(5);
  // B starts empty, so its newest seq is its event count; reading it costs no scan.
  while (newest_event_seq(b_db) < events) {
    if (Clock::now() > deadline) throw Error("relay bench: events did not all reach B in 5 min");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto elapsed = Clock::now() - start;
  ingester.stop();
  relay.stop();
  return per_second(events, elapsed);
}

}  // namespace

RelayBenchResult run_relay_bench(int events, int keys, int rounds) {
  testing::NatsServerProcess server;
  testing::TempDir dir;
  const std::vector<NewEvent> new_events = make_events(events, keys, false);
  const std::vector<NewEvent> alternating_events = make_events(events, keys, true);
  std::vector<double> plain;
  std::vector<double> relayed;
  std::vector<double> ratios;
  std::vector<double> alternating;
  std::vector<double> alternating_ratios;
  for (int round = 0; round < rounds; ++round) {
    const std::string name = std::to_string(round);
    plain.push_back(plain_publish_rate(server.url(), new_events, name));
    relayed.push_back(relay_rate(server.url(), dir, new_events, name));
    ratios.push_back(relayed.back() / plain.back());
    alternating.push_back(relay_rate(server.url(), dir, alternating_events, name + "alt"));
    alternating_ratios.push_back(alternating.back() / relayed.back());
  }
  RelayBenchResult result;
  result.events = events;
  result.rounds = rounds;
  result.plain_publish_per_second = median(plain);
  result.relay_events_per_second = median(relayed);
  result.ratio = median(ratios);
  result.lowest_ratio = *std::min_element(ratios.begin(), ratios.end());
  result.highest_ratio = *std::max_element(ratios.begin(), ratios.end());
  result.alternating_events_per_second = median(alternating);
  result.alternating_ratio = median(alternating_ratios);
  return result;
}

}  // namespace sluice::bench
