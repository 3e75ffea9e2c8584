// `sluice stats`: per-consumer backlog, failures and lag, once or redrawn with --watch.
#include <CLI/CLI.hpp>
#include <deque>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "commit_wait.hpp"
#include "format.hpp"
#include "health_checks.hpp"
#include "interrupt.hpp"
#include "json_fields.hpp"
#include "pause_text.hpp"
#include "printable.hpp"
#include "sluice/stats.hpp"
#include "sparkline.hpp"
#include "table.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

// Backlog samples kept per consumer for the --watch trend.
constexpr std::size_t kTrendSamples = 20;

using Trends = std::map<std::string, std::deque<long long>>;

std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ",") + part;
  return text;
}

std::string highlight(const Style& style, long long value, bool bad) {
  const std::string text = std::to_string(value);
  if (value == 0) return text;
  return bad ? style.red(text) : style.yellow(text);
}

void print_table(const std::vector<ConsumerStats>& stats, const std::vector<ConsumerHealth>& health,
                 const Trends* trends, const Style& style, TimePoint now) {
  std::vector<std::string> headers{"CONSUMER", "TOPICS", "PENDING",    "CLAIMED",
                                   "RETRYING", "DEAD",   "DELIVERED",  "RETRIES",
                                   "LAG",      "PARKED", "NO HANDLER", "WORKERS"};
  if (trends != nullptr) headers.push_back("BACKLOG TREND");
  Table table(headers);
  for (std::size_t column = 2; column <= 10; ++column) table.align_right(column);
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const ConsumerStats& s = stats[i];
    const std::string workers = describe_workers(health[i], now);
    std::vector<std::string> row{
        printable(s.consumer),
        printable(join(s.topics)),
        std::to_string(s.pending),
        std::to_string(s.claimed),
        highlight(style, s.retrying, false),
        highlight(style, s.dead, true),
        std::to_string(s.delivered_total),
        std::to_string(s.retries_total),
        format_duration(s.lag),
        highlight(style, s.parked_keys, false),
        highlight(style, s.waiting_for_handler, false),
        health[i].live_workers > 0 || s.due == 0 ? workers : style.yellow(workers)};
    if (trends != nullptr) {
      const auto& samples = trends->at(s.consumer);
      row.push_back(sparkline({samples.begin(), samples.end()}));
    }
    table.add_row(row);
  }
  table.print(std::cout, style);
  if (stats.empty()) std::cout << "(no consumers yet)\n";
  for (const ConsumerStats& s : stats) {
    if (s.paused)
      std::cout << style.yellow(printable(s.consumer) + " " + describe_pause(s)) << '\n';
    if (s.breaker == "open" || s.breaker == "half-open") {
      std::cout << style.yellow(printable(s.consumer) + " breaker " + s.breaker + " until " +
                                format_time(*s.breaker_open_until) + " (" +
                                std::to_string(s.breaker_failures) + " failures in a row)")
                << '\n';
    }
  }
}

// Where each NATS ingester writing to this file stands in its stream; nothing when none does.
void print_positions(const std::vector<IngestPosition>& positions, const Style& style) {
  if (positions.empty()) return;
  Table table({"STREAM", "DURABLE", "POSITION"});
  table.align_right(2);
  for (const IngestPosition& p : positions)
    table.add_row({printable(p.stream), printable(p.durable), std::to_string(p.stream_seq)});
  std::cout << '\n';
  table.print(std::cout, style);
}

Json stats_document(const std::vector<ConsumerStats>& stats,
                    const std::vector<ConsumerHealth>& health,
                    const std::vector<IngestPosition>& positions, TimePoint now) {
  Json consumers = Json::array();
  for (std::size_t i = 0; i < stats.size(); ++i) {
    Json consumer = consumer_stats_json(stats[i]);
    consumer["live_workers"] = health[i].live_workers;
    consumer["last_seen_worker_at"] = time_json(health[i].last_seen_worker);
    consumers.push_back(std::move(consumer));
  }
  Json ingest = Json::array();
  for (const IngestPosition& p : positions) ingest.push_back(ingest_position_json(p));
  return Json{{"generated_at", format_time(now)}, {"consumers", consumers}, {"ingest", ingest}};
}

// --watch takes whole seconds ("2") or a duration ("500ms").
Duration parse_interval(const std::string& text) {
  const bool plain_seconds =
      !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  const Duration interval = parse_duration(plain_seconds ? text + "s" : text);
  if (interval < std::chrono::milliseconds(100)) {
    throw UsageError("invalid --watch interval '" + text + "': must be at least 100ms");
  }
  return interval;
}

// Waits for the next redraw: `interval` after the last one, or sooner once another connection
// commits (as `tail` and a started worker wake), but not sooner than 100 ms, the shortest
// interval, so that a busy file is not redrawn at every commit. False once interrupted.
bool wait_for_redraw(InterruptWatch& interrupt, CommitWait& commits, Duration interval) {
  constexpr std::chrono::milliseconds kQuickest{100};
  if (interrupt.wait_for(kQuickest)) return false;
  commits.wait_for(interrupt, std::chrono::ceil<std::chrono::milliseconds>(interval) - kQuickest);
  return !interrupt.interrupted();
}

void watch(SQLite::Database& db, const Session& session, bool json, Duration interval) {
  InterruptWatch interrupt;
  CommitWait commits(db, session.options().poll_interval);
  const Style style = session.style();
  const bool redraw_in_place = is_terminal(1);
  Trends trends;
  do {
    const TimePoint now = system_clock()->now();
    const auto stats = consumer_stats(db, session.options());
    const auto health = read_consumer_health(db, stats, session.options(), {}, now);
    if (json) {
      print_json_line(std::cout, stats_document(stats, health, ingest_positions(db), now));
      continue;
    }
    for (const ConsumerStats& s : stats) {
      auto& samples = trends[s.consumer];
      samples.push_back(s.pending);
      if (samples.size() > kTrendSamples) samples.pop_front();
    }
    if (redraw_in_place) std::cout << "\x1b[H\x1b[2J";
    std::cout << style.dim(printable(session.db_path) + "  " + format_time(now) + "  every " +
                           format_duration(interval) + " (Ctrl-C to stop)")
              << '\n';
    print_table(stats, health, &trends, style, now);
    print_positions(ingest_positions(db), style);
    if (!redraw_in_place) std::cout << '\n';
    std::cout << std::flush;
  } while (wait_for_redraw(interrupt, commits, interval));
}

}  // namespace

void add_stats_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    bool json = false;
    std::string watch;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "stats",
      "Per consumer: pending, claimed, retrying, dead, delivered, retries, lag, parked, events "
      "waiting for a handler, and its workers (alive, or when last seen)");
  command->footer(
      "A file a NATS ingester writes to also lists each STREAM, DURABLE and the POSITION (stream\n"
      "sequence) it has ingested up to. Under the table, a line per paused consumer and per open\n"
      "or half-open circuit breaker (ConsumerOptions::breaker; --json: breaker {state, failures,\n"
      "open_until, cool_down_seconds}).\nExample:\n  sluice --db app.db stats\n  sluice --db "
      "app.db stats --watch 2   "
      "# redraw every 2 s with a backlog sparkline");
  command->add_flag("--json", args->json,
                    "Print {generated_at, consumers: [...]}; with --watch one line per sample");
  command
      ->add_option(
          "--watch", args->watch,
          "Redraw every SECONDS (or a duration), and as soon as something commits, until Ctrl-C")
      ->type_name("SECONDS");
  command->callback([session, args]() {
    const Duration interval = args->watch.empty() ? Duration(0) : parse_interval(args->watch);
    SQLite::Database db = session->open_read_only();
    if (!args->watch.empty()) return watch(db, *session, args->json, interval);
    const TimePoint now = system_clock()->now();
    const auto stats = consumer_stats(db, session->options());
    const auto health = read_consumer_health(db, stats, session->options(), {}, now);
    const auto positions = ingest_positions(db);
    if (args->json) return print_json(std::cout, stats_document(stats, health, positions, now));
    print_table(stats, health, nullptr, session->style(), now);
    print_positions(positions, session->style());
  });
}

}  // namespace sluice::cli
