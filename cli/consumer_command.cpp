// `sluice consumer`: list consumers with their state, pause and resume one, remove one that is no
// longer run with all its state.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "pause_text.hpp"
#include "printable.hpp"
#include "sluice/consumer_removal.hpp"
#include "sluice/error.hpp"
#include "sluice/pause.hpp"
#include "sluice/stats.hpp"
#include "table.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ",") + item;
  return text;
}

Json removal_json(const ConsumerRemoval& r, bool dry_run) {
  return Json{{"consumer", r.consumer},
              {"dry_run", dry_run},
              {"removed", r.removed},
              {"topics", r.topics},
              {"deliveries", r.deliveries},
              {"dead_letters", r.dead_letters},
              {"inbox", r.inbox},
              {"claims", r.claims},
              {"attempts", r.attempts},
              {"last_active", time_json(r.last_active)},
              {"live_worker", r.live_worker.empty() ? Json(nullptr) : Json(r.live_worker)}};
}

void print_removal(const ConsumerRemoval& r) {
  std::cout << "consumer     " << printable(r.consumer) << '\n'
            << "topics       " << printable(join(r.topics)) << '\n'
            << "deliveries   " << r.deliveries << " (" << r.dead_letters << " dead letter(s))\n"
            << "seen IDs     " << r.inbox << '\n'
            << "claims       " << r.claims << '\n'
            << "attempts     " << r.attempts << '\n'
            << "last active  " << (r.last_active ? format_time(*r.last_active) : "never") << '\n';
  if (!r.live_worker.empty()) {
    std::cout << "would refuse: a worker of '" << printable(r.consumer) << "' looks alive ("
              << printable(r.live_worker) << "); stop its workers first, or --force\n";
    return;
  }
  std::cout << (r.removed ? "removed consumer " : "would remove consumer ") << printable(r.consumer)
            << '\n';
}

void add_remove(CLI::App& consumer, std::shared_ptr<Session> session) {
  struct Args {
    std::string name;
    bool dry_run = false;
    bool force = false;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = consumer.add_subcommand(
      "remove",
      "Remove a consumer that is no longer run and all its state, so it stops holding back prune");
  command->footer(
      "Removes its subscriptions, deliveries (dead letters too), seen IDs, claims and attempt\n"
      "history. Refused while a worker of it looks alive (a claim of a running process, or work\n"
      "in the last hour) unless --force; stop its workers first (one idle for longer is not\n"
      "seen, and fails on its next claim). --dry-run is never refused: it says whether the\n"
      "removal would be.\nExample:\n"
      "  sluice --db app.db consumer remove old-reports --dry-run");
  command->add_option("NAME", args->name, "The consumer")->required();
  command->add_flag("--dry-run", args->dry_run, "Print what would be removed; remove nothing");
  command->add_flag("--force", args->force, "Remove even while a worker of it looks alive");
  command->add_flag("--json", args->json,
                    "Print {consumer, dry_run, removed, topics, deliveries, dead_letters, inbox, "
                    "claims, attempts, last_active, live_worker}");
  command->callback([session, args]() {
    SQLite::Database db = session->open();
    ConsumerRemoval removal;
    try {
      AuditEntry audit{.source = "cli"};
      removal = remove_consumer(db, args->name, {.force = args->force, .dry_run = args->dry_run},
                                session->options(), audit);
    } catch (const InvalidArgument& e) {
      throw UsageError(std::string(e.what()) + " with --force");
    }
    if (args->json) return print_json(std::cout, removal_json(removal, args->dry_run));
    print_removal(removal);
  });
}

// The consumer's row of `consumer list --json` and of pause and resume.
Json consumer_state_json(const ConsumerStats& s) {
  return Json{{"consumer", s.consumer},
              {"topics", s.topics},
              {"paused", s.paused},
              {"pause", pause_json(s)},
              {"throttled_total", s.throttled_total},
              {"breaker", s.breaker}};
}

const ConsumerStats& find_consumer_stats(const std::vector<ConsumerStats>& all,
                                         const std::string& name) {
  for (const ConsumerStats& s : all) {
    if (s.consumer == name) return s;
  }
  throw NotFound("sluice: consumer '" + name + "' is not in the file");
}

void add_consumer_list(CLI::App& consumer, std::shared_ptr<Session> session) {
  auto json = std::make_shared<bool>(false);
  CLI::App* command = consumer.add_subcommand(
      "list", "List consumers: topics, and whether each runs or is paused (since, until, why)");
  command->footer(
      "STATE is running or paused; a paused consumer's row says since when, until when\n"
      "('resumed': until `consumer resume`), by whom (operator, throttle) and why.\n"
      "BREAKER is its circuit breaker: off (none), closed, open or half-open.\n"
      "Example:\n  sluice --db app.db consumer list --json");
  command->add_flag("--json", *json,
                    "Print [{consumer, topics, paused, pause: {since, until, by, note} or null, "
                    "throttled_total, breaker}]");
  command->callback([session, json]() {
    SQLite::Database db = session->open_read_only();
    const std::vector<ConsumerStats> all = consumer_stats(db, session->options());
    if (*json) {
      Json rows = Json::array();
      for (const ConsumerStats& s : all) rows.push_back(consumer_state_json(s));
      return print_json(std::cout, rows);
    }
    const Style style = session->style();
    Table table({"CONSUMER", "TOPICS", "STATE", "SINCE", "UNTIL", "BY", "NOTE", "BREAKER"});
    for (const ConsumerStats& s : all) {
      table.add_row(
          {printable(s.consumer), printable(join(s.topics)),
           s.paused ? style.yellow("paused") : "running",
           s.paused ? format_time(s.paused_since) : "",
           !s.paused        ? ""
           : s.paused_until ? format_time(*s.paused_until)
                            : "resumed",
           s.paused ? s.paused_by : "", s.paused ? printable(s.pause_note) : "",
           s.breaker == "open" || s.breaker == "half-open" ? style.yellow(s.breaker) : s.breaker});
    }
    table.print(std::cout, style);
    if (all.empty()) std::cout << "(no consumers yet)\n";
  });
}

void add_consumer_pause(CLI::App& consumer, std::shared_ptr<Session> session) {
  struct Args {
    std::string name;
    std::string for_duration;
    std::string until;
    std::string note;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = consumer.add_subcommand(
      "pause", "Pause a consumer in every process: its workers claim nothing until it is resumed");
  command->footer(
      "Workers of every process stop claiming within one wake-up; events they claimed but had\n"
      "not handed to a handler go back with no attempt spent; calls already running finish.\n"
      "Nothing is retried or dead-lettered while paused. A pause --for a time ends by itself.\n"
      "Recorded in the audit log.\nExample:\n"
      "  sluice --db app.db consumer pause mailer --for 2h --note 'mail API down'");
  command->add_option("NAME", args->name, "The consumer")->required();
  CLI::Option* for_option =
      command->add_option("--for", args->for_duration, "End the pause after this long (e.g. 2h)")
          ->type_name("DURATION");
  command->add_option("--until", args->until, "End the pause at this time (RFC 3339)")
      ->type_name("TIME")
      ->excludes(for_option);
  command->add_option("--note", args->note, "Why, shown by stats and the console")
      ->type_name("TEXT");
  command->add_flag("--json", args->json,
                    "Print {consumer, topics, paused, pause: {since, until, by, note}, "
                    "throttled_total}");
  command->callback([session, args]() {
    PauseOptions pause;
    pause.note = args->note;
    if (!args->for_duration.empty()) {
      const Duration length = parse_duration(args->for_duration);
      if (length <= Duration(0)) throw UsageError("invalid --for '" + args->for_duration + "'");
      pause.until = system_clock()->now() + length;
    } else if (!args->until.empty()) {
      pause.until = parse_time(args->until);
    }
    SQLite::Database db = session->open();
    try {
      AuditEntry audit{.source = "cli"};
      pause_consumer(db, args->name, pause, session->options(), audit);
    } catch (const InvalidArgument& e) {
      throw UsageError(e.what());
    }
    const std::vector<ConsumerStats> all = consumer_stats(db, session->options());
    const ConsumerStats& s = find_consumer_stats(all, args->name);
    if (args->json) return print_json(std::cout, consumer_state_json(s));
    std::cout << printable(s.consumer) << ": " << describe_pause(s) << '\n';
  });
}

void add_consumer_resume(CLI::App& consumer, std::shared_ptr<Session> session) {
  struct Args {
    std::string name;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command =
      consumer.add_subcommand("resume", "End a consumer's pause (an operator's or a throttle's)");
  command->footer(
      "Its workers wake and claim again. Resuming a consumer that is not paused changes\n"
      "nothing (and says so). Recorded in the audit log.\nExample:\n"
      "  sluice --db app.db consumer resume mailer");
  command->add_option("NAME", args->name, "The consumer")->required();
  command->add_flag("--json", args->json,
                    "Print {consumer, topics, paused, pause, throttled_total, was_paused}");
  command->callback([session, args]() {
    SQLite::Database db = session->open();
    AuditEntry audit{.source = "cli"};
    const bool was_paused = resume_consumer(db, args->name, session->options(), audit);
    const std::vector<ConsumerStats> all = consumer_stats(db, session->options());
    const ConsumerStats& s = find_consumer_stats(all, args->name);
    if (args->json) {
      Json document = consumer_state_json(s);
      document["was_paused"] = was_paused;
      return print_json(std::cout, document);
    }
    std::cout << printable(s.consumer) << (was_paused ? ": resumed\n" : ": was not paused\n");
  });
}

}  // namespace

void add_consumer_command(CLI::App& app, std::shared_ptr<Session> session) {
  CLI::App* consumer = app.add_subcommand(
      "consumer", "Consumers: list them, pause and resume one, remove one no longer run");
  consumer->footer(
      "Example:\n  sluice --db app.db consumer list\n"
      "  sluice --db app.db consumer pause mailer --for 30m --note 'provider outage'\n"
      "  sluice --db app.db consumer remove old-reports --dry-run");
  consumer->callback([consumer]() {
    if (consumer->get_subcommands().empty()) {
      throw UsageError("consumer needs a subcommand: list, pause, resume or remove");
    }
  });
  add_consumer_list(*consumer, session);
  add_consumer_pause(*consumer, session);
  add_consumer_resume(*consumer, session);
  add_remove(*consumer, session);
}

}  // namespace sluice::cli
