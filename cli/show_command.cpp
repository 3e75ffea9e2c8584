// `sluice show EVENT_ID`: one event, its payload and every consumer's delivery history.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "event_views.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
#include "sluice/inspect.hpp"
#include "table.hpp"

namespace sluice::cli {
namespace {

std::string optional_time(const std::optional<TimePoint>& t) { return t ? format_time(*t) : "-"; }

std::string coloured_state(const Style& style, const std::string& state) {
  if (state == "dead") return style.red(state);
  if (state == "retrying" || state == "claimed") return style.yellow(state);
  if (state == "delivered") return style.green(state);
  return state;
}

// Why an event has no delivery rows: nobody subscribes to its topic, or those who do subscribed
// after it (a consumer starts from "now" by default), which a backfill answers.
void print_no_deliveries(const Event& event, const std::vector<std::string>& late) {
  if (late.empty()) {
    std::cout << "  (no consumer subscribes to " << printable(event.topic) << ")\n";
    return;
  }
  std::string names;
  for (const std::string& name : late) names += (names.empty() ? "" : ", ") + name;
  std::cout << "  (" << printable(names) << " subscribed to " << printable(event.topic)
            << " after this event; sluice replay --consumer " << printable(late.front())
            << " --from-event " << printable(event.id) << " delivers it)\n";
}

void print_event(const Event& event, const std::vector<DeliveryStatus>& deliveries,
                 const std::vector<std::string>& late, const std::vector<AttemptRecord>& attempts,
                 const Style& style) {
  std::cout << style.bold("event") << "       " << printable(event.id) << '\n'
            << "seq         " << event.seq << '\n'
            << "topic       " << printable(event.topic) << '\n'
            << "version     " << event.version << '\n';
  if (!event.key.empty()) std::cout << "key         " << printable(event.key) << '\n';
  if (!event.dedup_key.empty()) {
    std::cout << "dedup key   " << printable(event.dedup_key) << '\n';
  }
  std::cout << "created     " << format_time(event.created_at) << '\n';
  if (event.not_before) std::cout << "not before  " << format_time(*event.not_before) << '\n';
  if (const std::string trace = trace_id(event); !trace.empty())
    std::cout << "trace       " << trace << '\n';
  if (!event.headers.empty()) {
    std::cout << style.bold("headers") << '\n';
    for (const auto& [name, value] : event.headers)
      std::cout << "  " << printable(name) << ": " << printable(value) << '\n';
  }
  std::cout << style.bold("payload") << '\n' << pretty_payload(event) << '\n';

  std::cout << style.bold("deliveries") << '\n';
  Table delivery_table(
      {"CONSUMER", "STATE", "ATTEMPTS", "NEXT ATTEMPT", "DELIVERED", "LAST ERROR"});
  delivery_table.align_right(2);
  for (const DeliveryStatus& d : deliveries) {
    delivery_table.add_row({printable(d.consumer), coloured_state(style, printable(d.state)),
                            std::to_string(d.attempts), optional_time(d.next_attempt_at),
                            optional_time(d.delivered_at), printable(d.last_error)});
  }
  if (deliveries.empty()) {
    print_no_deliveries(event, late);
  } else {
    delivery_table.print(std::cout, Style(false));
  }

  if (!attempts.empty()) {
    std::cout << style.bold("attempts") << '\n';
    Table attempt_table({"CONSUMER", "ATTEMPT", "AT", "OUTCOME", "ERROR"});
    attempt_table.align_right(1);
    for (const AttemptRecord& a : attempts) {
      attempt_table.add_row({printable(a.consumer), std::to_string(a.attempt), format_time(a.at),
                             printable(a.outcome), printable(a.error)});
    }
    attempt_table.print(std::cout, Style(false));
  }
}

}  // namespace

void add_show_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string event_id;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command =
      app.add_subcommand("show", "One event: headers, payload, and per consumer its history");
  command->footer("Example:\n  sluice --db app.db show 01JD0F3W5R8M9K2Q7Y4T6V1B3N --json");
  command->add_option("EVENT_ID", args->event_id, "The event's ID")->required();
  command->add_flag("--json", args->json,
                    "Print {event, deliveries: [...], subscribed_after: [...], attempts: [...]}");
  command->callback([session, args]() {
    SQLite::Database db = session->open_read_only();
    const Event event = find_event(db, args->event_id);
    const auto deliveries = delivery_statuses(db, event);
    const auto attempts = attempt_history(db, event);
    const auto late = late_subscribers(db, event);
    if (!args->json) return print_event(event, deliveries, late, attempts, session->style());
    Json delivery_list = Json::array();
    for (const auto& d : deliveries) delivery_list.push_back(delivery_json(d));
    Json attempt_list = Json::array();
    for (const auto& a : attempts) attempt_list.push_back(attempt_json(a));
    print_json(std::cout, Json{{"event", event_json(event)},
                               {"deliveries", delivery_list},
                               {"subscribed_after", late},
                               {"attempts", attempt_list}});
  });
}

}  // namespace sluice::cli
