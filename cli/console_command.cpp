// `sluice console`: a local web console over the file, served until Ctrl-C.
#include <CLI/CLI.hpp>
#include <iostream>

#include "commands.hpp"
#include "console_server.hpp"
#include "interrupt.hpp"

namespace sluice::cli {

void add_console_command(CLI::App& app, std::shared_ptr<Session> session) {
  auto options = std::make_shared<ConsoleOptions>();
  CLI::App* command = app.add_subcommand(
      "console",
      "A web console: overview, events, dead letters (replay, discard), backfill, "
      "prune, audit log");
  command->footer(
      "The page and a JSON API under /api/ (docs/operating.md), served from this binary: no\n"
      "network needed. Loopback only unless --token is given; every action is recorded in the\n"
      "audit log (sluice audit). A request header must arrive whole within 5s; at most 256\n"
      "connections wait for one, the longest-waiting closed past that.\nExample:\n  sluice --db "
      "app.db console\n  "
      "SLUICE_CONSOLE_TOKEN=s3cret sluice --db app.db console --listen 0.0.0.0:8080");
  command
      ->add_option("--listen", options->listen,
                   "HOST:PORT to serve on (default " + options->listen + "; port 0: any free)")
      ->type_name("HOST:PORT");
  command->add_flag("--read-only", options->read_only,
                    "Show only: every action (POST) is refused with 403");
  command
      ->add_option("--token", options->token,
                   "Require this token on every request (Authorization: Bearer, or ?token= on "
                   "the page); needed off loopback")
      ->envname("SLUICE_CONSOLE_TOKEN");
  command->callback([session, options]() {
    session->require_path();
    ConsoleServer server(*session, *options);
    InterruptWatch interrupt;
    std::cout << "sluice console: " << server.url() << " serving " << session->db_path
              << (options->read_only ? " read-only" : "") << " (Ctrl-C to stop)" << std::endl;
    while (!interrupt.wait_for(std::chrono::hours(1))) {
    }
  });
}

}  // namespace sluice::cli
