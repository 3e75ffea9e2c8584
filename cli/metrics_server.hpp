// Serving `sluice metrics` over HTTP for Prometheus to scrape.
#pragma once

#include <string>

#include "session.hpp"

namespace sluice::cli {

// Serves GET /metrics (Prometheus text, read fresh from the file per request) on `listen`
// ("HOST:PORT"; port 0 picks a free one) until SIGINT or SIGTERM. Prints the bound URL on
// standard error once listening. Throws UsageError for a bad address or one that cannot be bound.
void serve_metrics(const Session& session, const std::string& listen);

}  // namespace sluice::cli
