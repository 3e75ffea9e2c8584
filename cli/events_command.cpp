// `sluice events`: list events, optionally as one consumer sees them.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "event_views.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "sluice/inspect.hpp"
#include "usage_error.hpp"

namespace sluice::cli {

void add_events_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string topic;
    std::string consumer;
    std::string state;
    std::string since;
    int limit = 100;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand("events", "List events, oldest first");
  command->footer(
      "States (with --consumer): pending, claimed, retrying, delivered, dead, discarded."
      "\nExample:\n  sluice --db app.db events --consumer billing --state retrying "
      "--since 2h");
  command->add_option("--topic", args->topic, "Only this topic");
  command->add_option("--consumer", args->consumer, "Only events this consumer subscribes to");
  command->add_option("--state", args->state, "Only events in this state for --consumer");
  command->add_option("--since", args->since, "Created at or after TIME (RFC 3339 or e.g. 2h)")
      ->type_name("TIME");
  command->add_option("--limit", args->limit, "At most N events (default 100)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  command->add_flag("--json", args->json, "Print {events: [...]}");
  command->callback([session, args]() {
    EventFilter filter;
    filter.topic = args->topic;
    filter.consumer = args->consumer;
    filter.state = args->state;
    filter.limit = args->limit;
    if (!args->state.empty() && args->consumer.empty()) {
      throw UsageError("--state needs --consumer: a state is always some consumer's view");
    }
    if (!args->since.empty()) filter.since = parse_time_or_ago(args->since, system_clock()->now());
    SQLite::Database db = session->open_read_only();
    const auto events = list_events(db, filter);
    if (args->json) {
      Json list = Json::array();
      for (const Event& event : events) list.push_back(event_json(event));
      return print_json(std::cout, Json{{"events", list}});
    }
    Table table = event_table();
    for (const Event& event : events) add_event_row(table, event);
    table.print(std::cout, session->style());
  });
}

}  // namespace sluice::cli
