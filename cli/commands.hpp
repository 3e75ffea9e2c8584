// Each command adds itself to the parser; main.cpp only wires them together.
#pragma once

#include <memory>

#include "session.hpp"

namespace CLI {
class App;
}

namespace sluice::cli {

void add_init_command(CLI::App& app, std::shared_ptr<Session> session);
void add_migrate_command(CLI::App& app, std::shared_ptr<Session> session);
void add_stats_command(CLI::App& app, std::shared_ptr<Session> session);
void add_events_command(CLI::App& app, std::shared_ptr<Session> session);
void add_show_command(CLI::App& app, std::shared_ptr<Session> session);
void add_tail_command(CLI::App& app, std::shared_ptr<Session> session);
void add_enqueue_command(CLI::App& app, std::shared_ptr<Session> session);
void add_dlq_command(CLI::App& app, std::shared_ptr<Session> session);
void add_replay_command(CLI::App& app, std::shared_ptr<Session> session);
void add_consumer_command(CLI::App& app, std::shared_ptr<Session> session);
void add_prune_command(CLI::App& app, std::shared_ptr<Session> session);
void add_check_command(CLI::App& app, std::shared_ptr<Session> session);
void add_export_command(CLI::App& app, std::shared_ptr<Session> session);
void add_metrics_command(CLI::App& app, std::shared_ptr<Session> session);
void add_audit_command(CLI::App& app, std::shared_ptr<Session> session);
void add_workers_command(CLI::App& app, std::shared_ptr<Session> session);
void add_console_command(CLI::App& app, std::shared_ptr<Session> session);

}  // namespace sluice::cli
