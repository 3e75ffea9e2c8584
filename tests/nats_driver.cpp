// Test driver: the `relay` and `ingest` CLI commands in a process of their own, so that scenario
// tests can kill them with SIGKILL. Linked with the crash-point build of the library.
#include <CLI/CLI.hpp>

#include "relay_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sluice NATS test driver"};
  app.require_subcommand(1);
  sluice::cli::add_nats_commands(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
