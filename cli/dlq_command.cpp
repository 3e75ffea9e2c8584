// `sluice dlq`: list, group, show, replay and discard dead letters.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "commands.hpp"
#include "event_views.hpp"
#include "fingerprint.hpp"
#include "format.hpp"
#include "interrupt.hpp"
#include "json_fields.hpp"
#include "number_bounds.hpp"
#include "printable.hpp"
#include "sluice/audit.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "table.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

// The filters every dlq subcommand takes.
struct FilterArgs {
  std::vector<std::string> event_ids;
  std::string consumer;
  std::string topic;
  std::string since;
  std::string error;
};

void add_filter_options(CLI::App* command, FilterArgs& args) {
  command->add_option("--consumer", args.consumer, "Only this consumer's dead letters");
  command->add_option("--topic", args.topic, "Only events of this topic");
  command->add_option("--since", args.since, "Last failed at or after TIME (RFC 3339 or e.g. 2h)")
      ->type_name("TIME");
  command->add_option("--error", args.error, "Only errors containing TEXT")->type_name("TEXT");
}

DeadLetterFilter to_filter(const FilterArgs& args) {
  DeadLetterFilter filter;
  filter.event_ids = args.event_ids;
  filter.consumer = args.consumer;
  filter.topic = args.topic;
  filter.error_contains = args.error;
  if (!args.since.empty()) filter.since = parse_time_or_ago(args.since, system_clock()->now());
  return filter;
}

// The filters as the audit log records them: only those given.
std::string filter_record(const FilterArgs& args) {
  Json filter = Json::object();
  if (!args.event_ids.empty()) filter["event_ids"] = args.event_ids;
  if (!args.consumer.empty()) filter["consumer"] = args.consumer;
  if (!args.topic.empty()) filter["topic"] = args.topic;
  if (!args.since.empty()) filter["since"] = args.since;
  if (!args.error.empty()) filter["error"] = args.error;
  return json_text(filter);
}

Json dead_letter_list(const std::vector<DeadLetter>& dead_letters) {
  Json list = Json::array();
  for (const DeadLetter& d : dead_letters) list.push_back(dead_letter_json(d));
  return list;
}

// The first line of `text`, cut to `max_width` bytes, printable.
std::string first_line(const std::string& text, std::size_t max_width) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max_width) line = line.substr(0, max_width - 3) + "...";
  return printable(line);
}

void print_dead_letters(const std::vector<DeadLetter>& dead_letters, const Style& style) {
  // The operator's note says why a letter was discarded: shown whenever a discarded one is.
  const bool notes = std::any_of(dead_letters.begin(), dead_letters.end(),
                                 [](const DeadLetter& d) { return d.discarded; });
  std::vector<std::string> columns{"EVENT",    "CONSUMER",    "TOPIC", "REASON",
                                   "ATTEMPTS", "LAST FAILED", "ERROR"};
  if (notes) columns.push_back("NOTE");
  Table table(columns);
  table.align_right(4);
  for (const DeadLetter& d : dead_letters) {
    std::vector<std::string> row{printable(d.event_id),
                                 printable(d.consumer),
                                 printable(d.topic),
                                 d.discarded ? style.dim(printable(d.reason) + ", discarded")
                                             : style.red(printable(d.reason)),
                                 std::to_string(d.attempts),
                                 format_time(d.last_failed_at),
                                 first_line(d.last_error, 80)};
    if (notes) row.push_back(first_line(d.note, 60));
    table.add_row(row);
  }
  table.print(std::cout, style);
}

// Dead letters sharing an error fingerprint.
struct Group {
  std::string fingerprint;
  long long count = 0;
  std::set<std::string> consumers;
  std::set<std::string> topics;
  TimePoint first_seen = TimePoint::max();
  TimePoint last_seen = TimePoint::min();
  std::vector<std::string> event_ids;
  std::string example_error;
};

std::vector<Group> group_by_fingerprint(const std::vector<DeadLetter>& dead_letters) {
  std::map<std::string, Group> groups;
  for (const DeadLetter& d : dead_letters) {
    const std::string fingerprint = error_fingerprint(d.last_error);
    Group& group = groups[fingerprint];
    group.fingerprint = fingerprint;
    ++group.count;
    group.consumers.insert(d.consumer);
    group.topics.insert(d.topic);
    group.first_seen = std::min(group.first_seen, d.first_failed_at);
    group.last_seen = std::max(group.last_seen, d.last_failed_at);
    group.event_ids.push_back(d.event_id);
    if (group.example_error.empty()) group.example_error = d.last_error;
  }
  std::vector<Group> sorted;
  for (auto& [fingerprint, group] : groups) sorted.push_back(std::move(group));
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Group& a, const Group& b) { return a.count > b.count; });
  return sorted;
}

std::string join(const std::set<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ",") + item;
  return printable(text);
}

void print_groups(const std::vector<Group>& groups, const Style& style) {
  Table table({"COUNT", "CONSUMERS", "TOPICS", "FIRST SEEN", "LAST SEEN", "FINGERPRINT"});
  table.align_right(0);
  for (const Group& g : groups) {
    table.add_row({std::to_string(g.count), join(g.consumers), join(g.topics),
                   format_time(g.first_seen), format_time(g.last_seen),
                   first_line(g.fingerprint, 80)});
  }
  table.print(std::cout, style);
}

Json groups_json(const std::vector<Group>& groups) {
  Json list = Json::array();
  for (const Group& g : groups) {
    list.push_back(Json{{"fingerprint", g.fingerprint},
                        {"count", g.count},
                        {"consumers", g.consumers},
                        {"topics", g.topics},
                        {"first_seen", format_time(g.first_seen)},
                        {"last_seen", format_time(g.last_seen)},
                        {"example_error", g.example_error},
                        {"event_ids", g.event_ids}});
  }
  return list;
}

// The live dead letters an action applies to. Every event ID named must exist and have one;
// otherwise NotFound before anything changes.
std::vector<DeadLetter> select_for_action(SQLite::Database& db, const FilterArgs& args, bool all) {
  if (all == !args.event_ids.empty()) {
    throw UsageError("name the dead letters: give EVENT_ID... or --all (with filters), not both");
  }
  const auto matched = list_dead_letters(db, to_filter(args));
  for (const std::string& id : args.event_ids) {
    find_event(db, id);
    const bool has_match = std::any_of(matched.begin(), matched.end(),
                                       [&id](const DeadLetter& d) { return d.event_id == id; });
    if (!has_match) {
      throw NotFound("no dead letter for event " + id +
                     (args.consumer.empty() ? "" : " and consumer " + args.consumer) +
                     " (matching the filters)");
    }
  }
  return matched;
}

// The records of `matched` as they are now: what a discard left behind (with its note).
std::vector<DeadLetter> reread(SQLite::Database& db, const std::vector<DeadLetter>& matched) {
  DeadLetterFilter filter;
  for (const DeadLetter& d : matched) filter.event_ids.push_back(d.event_id);
  filter.include_discarded = true;
  std::vector<DeadLetter> now;
  for (DeadLetter& d : list_dead_letters(db, filter)) {
    const bool was_matched = std::any_of(matched.begin(), matched.end(), [&d](const DeadLetter& m) {
      return m.event_id == d.event_id && m.consumer == d.consumer;
    });
    if (was_matched) now.push_back(std::move(d));
  }
  return now;
}

enum class Action { kReplay, kDiscard };

// Applies the action one dead letter at a time, `rate` per second, so that a large replay does
// not flood the consumers, all recorded in `audit`. Stops early on Ctrl-C.
long long apply_paced(SQLite::Database& db, const std::vector<DeadLetter>& dead_letters,
                      double rate, Action action, const std::string& note, const Options& options,
                      AuditEntry& audit) {
  InterruptWatch interrupt;
  const auto interval = std::chrono::milliseconds(static_cast<long long>(1000.0 / rate));
  long long applied = 0;
  for (const DeadLetter& d : dead_letters) {
    if (applied > 0 && interrupt.wait_for(interval)) break;
    DeadLetterFilter one;
    one.event_ids = {d.event_id};
    one.consumer = d.consumer;
    applied += action == Action::kReplay ? replay_dead_letters(db, one, options, {}, audit)
                                         : discard_dead_letters(db, one, note, options, {}, audit);
  }
  return applied;
}

void add_list(CLI::App& dlq, std::shared_ptr<Session> session) {
  struct Args {
    FilterArgs filter;
    bool group = false;
    bool discarded = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = dlq.add_subcommand("list", "List dead letters, oldest failure first");
  command->footer(
      "Example:\n  sluice --db app.db dlq list --group\n  sluice --db app.db dlq list --consumer "
      "billing --error timeout --since 1h --json");
  add_filter_options(command, args->filter);
  command->add_flag("--group", args->group,
                    "Group by error fingerprint (numbers, IDs, quoted values normalised)");
  command->add_flag("--discarded", args->discarded, "Include discarded (audit) records");
  command->add_flag("--json", args->json,
                    "Print {dead_letters: [...]}, or with --group {groups: [...]}");
  command->callback([session, args]() {
    DeadLetterFilter filter = to_filter(args->filter);
    filter.include_discarded = args->discarded;
    SQLite::Database db = session->open_read_only();
    const auto dead_letters = list_dead_letters(db, filter);
    const Style style = session->style();
    if (args->group) {
      const auto groups = group_by_fingerprint(dead_letters);
      if (args->json) return print_json(std::cout, Json{{"groups", groups_json(groups)}});
      return print_groups(groups, style);
    }
    if (args->json)
      return print_json(std::cout, Json{{"dead_letters", dead_letter_list(dead_letters)}});
    print_dead_letters(dead_letters, style);
  });
}

void add_show(CLI::App& dlq, std::shared_ptr<Session> session) {
  struct Args {
    std::string event_id;
    std::string consumer;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command =
      dlq.add_subcommand("show", "An event's dead letters with the payload and attempt history");
  command->footer(
      "Example:\n  sluice --db app.db dlq show 01JD0F3W5R8M9K2Q7Y4T6V1B3N --consumer billing");
  command->add_option("EVENT_ID", args->event_id, "The event's ID")->required();
  command->add_option("--consumer", args->consumer, "Only this consumer's dead letter");
  command->add_flag("--json", args->json, "Print {event, dead_letters: [...], attempts: [...]}");
  command->callback([session, args]() {
    SQLite::Database db = session->open_read_only();
    const Event event = find_event(db, args->event_id);
    DeadLetterFilter filter;
    filter.event_ids = {args->event_id};
    filter.consumer = args->consumer;
    filter.include_discarded = true;
    const auto dead_letters = list_dead_letters(db, filter);
    if (dead_letters.empty()) {
      throw NotFound("no dead letter for event " + args->event_id +
                     (args->consumer.empty() ? "" : " and consumer " + args->consumer));
    }
    std::vector<AttemptRecord> attempts;
    for (const AttemptRecord& a : attempt_history(db, event)) {
      if (args->consumer.empty() || a.consumer == args->consumer) attempts.push_back(a);
    }
    if (args->json) {
      Json attempt_list = Json::array();
      for (const auto& a : attempts) attempt_list.push_back(attempt_json(a));
      return print_json(std::cout, Json{{"event", event_json(event)},
                                        {"dead_letters", dead_letter_list(dead_letters)},
                                        {"attempts", attempt_list}});
    }
    const Style style = session->style();
    for (const DeadLetter& d : dead_letters) {
      std::cout << style.bold("dead letter") << "  " << printable(d.event_id) << " for "
                << printable(d.consumer) << '\n'
                << "topic        " << printable(d.topic) << '\n';
      if (!d.key.empty()) std::cout << "key          " << printable(d.key) << '\n';
      std::cout << "reason       " << printable(d.reason) << '\n';
      if (d.discarded) std::cout << "discarded    " << printable(d.note) << '\n';
      std::cout << "attempts     " << d.attempts << '\n'
                << "first failed " << format_time(d.first_failed_at) << '\n'
                << "last failed  " << format_time(d.last_failed_at) << '\n'
                << "error        " << printable(d.last_error) << '\n'
                << "fingerprint  " << printable(error_fingerprint(d.last_error)) << '\n';
    }
    if (const std::string trace = trace_id(event); !trace.empty())
      std::cout << "trace        " << trace << '\n';
    std::cout << style.bold("payload") << '\n' << pretty_payload(event) << '\n';
    if (!attempts.empty()) {
      std::cout << style.bold("attempts") << '\n';
      Table table({"CONSUMER", "ATTEMPT", "AT", "OUTCOME", "ERROR"});
      table.align_right(1);
      for (const AttemptRecord& a : attempts) {
        table.add_row({printable(a.consumer), std::to_string(a.attempt), format_time(a.at),
                       printable(a.outcome), first_line(a.error, 80)});
      }
      table.print(std::cout, Style(false));
    }
  });
}

void add_action(CLI::App& dlq, std::shared_ptr<Session> session, Action action) {
  struct Args {
    FilterArgs filter;
    bool all = false;
    bool dry_run = false;
    double rate = 0;
    std::string note;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  const bool replay = action == Action::kReplay;
  CLI::App* command =
      replay ? dlq.add_subcommand("replay",
                                  "Put dead letters back to pending (attempts reset); the running "
                                  "worker picks them up within its poll interval")
             : dlq.add_subcommand("discard",
                                  "Mark dead letters discarded, keeping them as an audit record");
  command->footer(replay ? "Example:\n  sluice --db app.db dlq replay 01JD0F3W5R8M9K2Q7Y4T6V1B3N\n"
                           "  sluice --db app.db dlq replay --all --consumer billing --error "
                           "timeout --rate 50 --dry-run"
                         : "Example:\n  sluice --db app.db dlq discard --all --topic test.ping "
                           "--note \"test traffic, JIRA-123\"");
  command->add_option("EVENT_ID", args->filter.event_ids, "The events' IDs");
  command->add_flag("--all", args->all, "Every dead letter matching the filters");
  add_filter_options(command, args->filter);
  command->add_flag("--dry-run", args->dry_run, "List what would change; change nothing");
  if (replay) {
    command->add_option("--rate", args->rate, "At most N replays per second")
        ->type_name("N")
        ->check(number_above_zero());
  } else {
    command->add_option("--note", args->note, "Why (kept with the audit record)")->required();
  }
  command->add_flag("--json", args->json,
                    replay ? "Print {dry_run, replayed, dead_letters: [...]}"
                           : "Print {dry_run, discarded, note, dead_letters: [...]}");
  command->callback([session, args, action, replay]() {
    if (!replay && args->note.find_first_not_of(" \t\n") == std::string::npos) {
      throw UsageError("discard needs a non-empty --note saying why");
    }
    SQLite::Database db = session->open();
    const auto matched = select_for_action(db, args->filter, args->all);
    long long changed = 0;
    if (!args->dry_run && !matched.empty()) {
      const Options options = session->options();
      // One entry for the command, written with its first change (see AuditEntry).
      AuditEntry audit{.filter = filter_record(args->filter), .source = "cli"};
      if (args->rate > 0) {
        changed = apply_paced(db, matched, args->rate, action, args->note, options, audit);
      } else {
        const DeadLetterFilter filter = to_filter(args->filter);
        changed = replay ? replay_dead_letters(db, filter, options, {}, audit)
                         : discard_dead_letters(db, filter, args->note, options, {}, audit);
      }
    }
    const char* verb = replay ? "replayed" : "discarded";
    if (args->json) {
      Json document{{"dry_run", args->dry_run}, {verb, changed}};
      if (!replay) document["note"] = args->note;
      // A discard's records as it left them; a replayed one is no dead letter any more.
      document["dead_letters"] =
          dead_letter_list(replay || args->dry_run ? matched : reread(db, matched));
      return print_json(std::cout, document);
    }
    if (args->dry_run) {
      print_dead_letters(matched, session->style());
      std::cout << "would " << (replay ? "replay " : "discard ") << matched.size()
                << " dead letter(s)\n";
    } else {
      std::cout << verb << " " << changed << " dead letter(s)\n";
    }
  });
}

}  // namespace

void add_dlq_command(CLI::App& app, std::shared_ptr<Session> session) {
  CLI::App* dlq = app.add_subcommand("dlq", "Dead letters: list, show, replay, discard");
  dlq->footer("Example:\n  sluice --db app.db dlq list --group");
  dlq->callback([dlq]() {
    if (dlq->get_subcommands().empty()) {
      throw UsageError("dlq needs a subcommand: list, show, replay or discard");
    }
  });
  add_list(*dlq, session);
  add_show(*dlq, session);
  add_action(*dlq, session, Action::kReplay);
  add_action(*dlq, session, Action::kDiscard);
}

}  // namespace sluice::cli
