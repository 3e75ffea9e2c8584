// `sluice workers`: the registered workers, whether each lives (asked of the kernel, never
// written), and the claims each holds.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "format.hpp"
#include "json_fields.hpp"
#include "printable.hpp"
#include "sluice/workers.hpp"
#include "table.hpp"

namespace sluice::cli {
namespace {

std::string consumer_list(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ",") + part;
  return text;
}

std::string liveness_text(const Style& style, Liveness liveness) {
  const std::string name = liveness_name(liveness);
  switch (liveness) {
    case Liveness::kAlive:
      return style.green(name);
    case Liveness::kDead:
      return style.red(name);
    case Liveness::kUnknown:
      return style.yellow(name);
  }
  return name;
}

// "2 (oldest 4m12s)": how many claims, and how long the oldest has held its batch.
std::string claims_text(const WorkerStatus& worker, TimePoint now) {
  if (worker.claims.empty()) return "0";
  TimePoint oldest = worker.claims.front().since;
  for (const HeldClaim& claim : worker.claims) oldest = std::min(oldest, claim.since);
  return std::to_string(worker.claims.size()) + " (oldest " +
         format_duration(std::max(Duration(0), now - oldest)) + ")";
}

}  // namespace

void add_workers_command(CLI::App& app, std::shared_ptr<Session> session) {
  struct Args {
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* command = app.add_subcommand(
      "workers", "The registered workers: process, host, consumers, since when, alive or dead");
  command->footer(
      "A worker registers when it starts (a Worker, the C API's) or first claims (run_until_idle,\n"
      "SQL's sluice_claim), and leaves the list when it stops. Whether it lives comes from the\n"
      "kernel lock it holds beside the file (dead: its process is gone; its claims go to the\n"
      "next worker that looks); 'unknown' for a worker that cannot hold one and has no claim.\n"
      "Times are UTC. Reads only.\nExample:\n  sluice --db app.db workers\n  sluice --db app.db "
      "workers --json");
  command->add_flag("--json", args->json,
                    "Print {now, workers: [{id, pid, host, kind, consumers, started_at, liveness, "
                    "claims}]}");
  command->callback([session, args]() {
    SQLite::Database db = session->open_read_only();
    const TimePoint now = system_clock()->now();
    const std::vector<WorkerStatus> workers = list_workers(db, session->options());
    if (args->json) {
      Json list = Json::array();
      for (const WorkerStatus& worker : workers) list.push_back(worker_json(worker));
      return print_json(std::cout, Json{{"now", format_time(now)}, {"workers", list}});
    }
    const Style style = session->style();
    Table table({"ID", "PID", "HOST", "KIND", "CONSUMERS", "SINCE", "STATE", "CLAIMS"});
    table.align_right(0);
    table.align_right(1);
    for (const WorkerStatus& w : workers) {
      table.add_row({std::to_string(w.id), std::to_string(w.pid), printable(w.host),
                     printable(w.kind), printable(consumer_list(w.consumers)),
                     format_time(w.started_at) + " (" +
                         format_duration(std::max(Duration(0), now - w.started_at)) + " ago)",
                     liveness_text(style, w.liveness), claims_text(w, now)});
    }
    table.print(std::cout, style);
    if (workers.empty()) std::cout << "(no worker registered: none is running)\n";
  });
}

}  // namespace sluice::cli
