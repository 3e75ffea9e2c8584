// The `sluice relay` and `sluice ingest` commands (NATS JetStream), registered on the CLI's app.
#pragma once

#include <CLI/CLI.hpp>

namespace sluice::cli {

// `sluice relay FILE --nats URL --stream NAME --topic T... [--subject-prefix P]
//  [--consumer NAME] [--replicas N] [--metrics-listen HOST:PORT]`
void add_relay_command(CLI::App& app);

// `sluice ingest FILE --nats URL --stream NAME --durable NAME [--metrics-listen HOST:PORT]`
void add_ingest_command(CLI::App& app);

// Both of the above.
void add_nats_commands(CLI::App& app);

}  // namespace sluice::cli
