// `sluice consumer remove`: remove a consumer that is no longer run, with all its state.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
#include "sluice/consumer_removal.hpp"
#include "sluice/error.hpp"
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

}  // namespace

void add_consumer_command(CLI::App& app, std::shared_ptr<Session> session) {
  CLI::App* consumer = app.add_subcommand("consumer", "Consumers: remove one no longer run");
  consumer->footer("Example:\n  sluice --db app.db consumer remove old-reports --dry-run");
  consumer->callback([consumer]() {
    if (consumer->get_subcommands().empty()) {
      throw UsageError("consumer needs a subcommand: remove");
    }
  });
  add_remove(*consumer, session);
}

}  // namespace sluice::cli
