// `sluice events`: list events, optionally as one consumer sees them, a page at a time.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "event_views.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "number_bounds.hpp"
#include "sluice/inspect.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

void add_events_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string topic;
    std::string key;
    std::string id;
    std::string consumer;
    std::string state;
    std::string since;
    std::string until;
    std::int64_t after = 0;
    std::int64_t before = 0;
    bool newest_first = false;
    int limit = 100;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command =
      app.add_subcommand("events", "List events, oldest first (or newest first), a page at a time");
  command->footer(
      "States (with --consumer): pending, claimed, retrying, delivered, dead, discarded."
      "\nWhen more events match than --limit, a line on stderr says how to get the next page."
      "\nExample:\n  sluice --db app.db events --consumer billing --state retrying "
      "--since 2h\n  sluice --db app.db events --newest-first --limit 20");
  command->add_option("--topic", args->topic, "Only this topic");
  command->add_option("--key", args->key, "Only events with this ordering key");
  command->add_option("--id", args->id, "Only the event with this ID");
  command->add_option("--consumer", args->consumer, "Only events this consumer subscribes to");
  command->add_option("--state", args->state, "Only events in this state for --consumer");
  command->add_option("--since", args->since, "Created at or after TIME (RFC 3339 or e.g. 2h)")
      ->type_name("TIME");
  command->add_option("--until", args->until, "Created before TIME (RFC 3339 or e.g. 2h)")
      ->type_name("TIME");
  command->add_option("--after", args->after, "Only events with a SEQ greater than this")
      ->type_name("SEQ")
      ->check(whole_number_in(0));
  command->add_option("--before", args->before, "Only events with a SEQ less than this")
      ->type_name("SEQ")
      ->check(whole_number_in(1));
  command->add_flag("--newest-first", args->newest_first,
                    "The newest events first (default: the oldest first)");
  command->add_option("--limit", args->limit, "At most N events (default 100)")
      ->type_name("N")
      ->check(whole_number_in(1, 1'000'000));
  command->add_flag("--json", args->json,
                    "Print {events: [...], next_after_seq} (next_before_seq with --newest-first); "
                    "null when there is no next page");
  command->callback([session, args]() {
    EventFilter filter;
    filter.topic = args->topic;
    filter.key = args->key;
    filter.event_id = args->id;
    filter.consumer = args->consumer;
    filter.state = args->state;
    filter.after_seq = args->after;
    filter.before_seq = args->before;
    filter.newest_first = args->newest_first;
    // One more than the page: whether there is a next page, without counting.
    filter.limit = args->limit + 1;
    if (!args->state.empty() && args->consumer.empty()) {
      throw UsageError("--state needs --consumer: a state is always some consumer's view");
    }
    const TimePoint now = system_clock()->now();
    if (!args->since.empty()) filter.since = parse_time_or_ago(args->since, now);
    if (!args->until.empty()) filter.until = parse_time_or_ago(args->until, now);
    SQLite::Database db = session->open_read_only();
    auto events = list_events(db, filter);
    const bool more = static_cast<int>(events.size()) > args->limit;
    if (more) events.resize(args->limit);
    const Json next = more ? Json(events.back().seq) : Json(nullptr);
    if (args->json) {
      Json list = Json::array();
      for (const Event& event : events) list.push_back(event_json(event));
      return print_json(std::cout,
                        Json{{"events", list},
                             {args->newest_first ? "next_before_seq" : "next_after_seq", next}});
    }
    Table table = event_table();
    for (const Event& event : events) add_event_row(table, event);
    table.print(std::cout, session->style());
    // On stderr, so that the table on stdout stays only the table.
    if (more) {
      std::cerr << "More events match: the next page with "
                << (args->newest_first ? "--before " : "--after ") << events.back().seq << "\n";
    }
  });
}

}  // namespace sluice::cli
