// `sluice tail`: follow new events as they commit, like `tail -f`.
#include <SQLiteCpp/Statement.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "commit_wait.hpp"
#include "event_views.hpp"
#include "format.hpp"
#include "interrupt.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
#include "sluice/inspect.hpp"

namespace sluice::cli {
namespace {

constexpr int kPageSize = 500;

void print_line(const Event& event, bool json) {
  if (json) return print_json_line(std::cout, event_json(event));
  std::cout << format_time(event.created_at) << "  " << event.seq << "  " << printable(event.topic)
            << "  " << printable(event.id)
            << (event.key.empty() ? "" : "  key=" + printable(event.key)) << "  "
            << compact_payload(event, 200) << '\n'
            << std::flush;
}

}  // namespace

void add_tail_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    std::string topic;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand("tail", "Follow new events as they commit, until Ctrl-C");
  command->footer("Example:\n  sluice --db app.db tail --topic order.placed --json | jq .payload");
  command->add_option("--topic", args->topic, "Only this topic");
  command->add_flag("--json", args->json, "One event object per line (as in `events --json`)");
  command->callback([session, args]() {
    SQLite::Database db = session->open_read_only();
    InterruptWatch interrupt;
    EventFilter filter;
    filter.topic = args->topic;
    filter.limit = kPageSize;
    filter.after_seq = newest_event_seq(db);
    CommitWait commits(db, session->options().poll_interval);
    std::cerr << "following " << printable(session->db_path) << " after seq " << filter.after_seq
              << " (Ctrl-C to stop)" << std::endl;
    while (!interrupt.interrupted()) {
      std::vector<Event> page;
      do {
        page = list_events(db, filter);
        for (const Event& event : page) print_line(event, args->json);
        if (!page.empty()) filter.after_seq = page.back().seq;
      } while (page.size() == static_cast<std::size_t>(kPageSize));
      while (!interrupt.interrupted() && !commits.wait_for(interrupt, std::chrono::hours(1))) {
      }
    }
  });
}

}  // namespace sluice::cli
