#include "bullmq_cases.hpp"

#include <sqlite3.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "node_script.hpp"
#include "peer_side.hpp"
#include "redis_server.hpp"
#include "workload.hpp"

namespace bench {
namespace {

constexpr double kBullmqProcessTarget = 1.0;
constexpr long long kBullmqQuickJobs = 200;

// One Redis configuration the BullMQ side runs on, and the app file's durability beside it.
struct RedisConfig {
  std::string name;
  std::vector<std::string> settings;
  const char* app_synchronous;
  bool has_target;
};

std::vector<RedisConfig> redis_configs() {
  return {{"Redis default persistence", {}, "NORMAL", false},
          {"Redis appendfsync always",
           {"--appendonly", "yes", "--appendfsync", "always"},
           "FULL",
           true}};
}

// What bullmq_side.mjs reported, after checking it did the whole workload.
struct BullmqRun {
  SideFigures figures;
  nlohmann::json report;
};

BullmqRun bullmq_side(const PeerSettings& peers, const RedisServer& redis,
                      const RedisConfig& config, const std::string& path, long long jobs) {
  const nlohmann::json arguments = {{"path", path},
                                    {"synchronous", config.app_synchronous},
                                    {"jobs", jobs},
                                    {"topic", kTopic},
                                    {"domain_schema", kDomainSchema},
                                    {"redis_port", redis.port()},
                                    {"redis_pid", redis.pid()}};
  const std::string script = (std::filesystem::path(peers.peers_dir) / "bullmq_side.mjs").string();
  const std::string output = run_node_script(peers.node, script, {arguments.dump()});
  BullmqRun run;
  try {
    run.report = nlohmann::json::parse(output);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("bench: bullmq_side.mjs printed no JSON: " + output);
  }
  const long long expected_bytes = payload_bytes(jobs);
  if (run.report.value("done", -1LL) != jobs || run.report.value("left", -1LL) != 0 ||
      run.report.value("domain_rows", -1LL) != jobs ||
      run.report.value("payload_bytes", -1LL) != expected_bytes) {
    throw std::runtime_error("bench: BullMQ did not do the workload (" + std::to_string(jobs) +
                             " jobs, " + std::to_string(expected_bytes) +
                             " payload bytes): " + run.report.dump());
  }
  const double enqueue_seconds = run.report.at("enqueue_unstolen_seconds").get<double>();
  const double process_seconds = run.report.at("process_unstolen_seconds").get<double>();
  // Processing subtracts Node's and Redis's waits, right while they take turns (one job at a
  // time) but twice over where both wait at once: a sum past the wall time measured nothing.
  if (enqueue_seconds <= 0 || process_seconds <= 0) {
    throw std::runtime_error("bench: the BullMQ side's run-queue waits exceed its wall time (" +
                             run.report.dump() + "): the machine is too busy to measure it");
  }
  run.figures.enqueue_per_s = jobs / enqueue_seconds;
  run.figures.process_per_s = jobs / process_seconds;
  run.figures.process_wall_per_s = jobs / run.report.at("process_seconds").get<double>();
  return run;
}

void require_bullmq_installed(const PeerSettings& peers) {
  const std::filesystem::path modules = std::filesystem::path(peers.peers_dir) / "node_modules";
  for (const char* package : {"bullmq", "ioredis", "better-sqlite3"}) {
    if (!std::filesystem::exists(modules / package)) {
      throw std::runtime_error("bench: " + (modules / package).string() +
                               " is missing: run `make peers-deps` (npm ci in " + peers.peers_dir +
                               ", as bench/README.md says)");
    }
  }
}

std::string versions_note(const nlohmann::json& report, int rounds) {
  return "floor = BullMQ " + report.value("bullmq", "?") + " (ioredis " +
         report.value("ioredis", "?") + ") on redis-server " + report.value("redis_version", "?") +
         " (appendonly " + report.value("appendonly", "?") + ", appendfsync " +
         report.value("appendfsync", "?") + "), handler on better-sqlite3 " +
         report.value("better_sqlite3", "?") + " (SQLite " + report.value("sqlite_version", "?") +
         ", journal " + report.value("journal_mode", "?") + ", synchronous " +
         std::to_string(report.value("synchronous", -1)) + "); sluice on SQLite " +
         sqlite3_libversion() + "; wall time less run-queue wait, best of " +
         std::to_string(rounds);
}

}  // namespace

void run_bullmq_cases(Run& run, const PeerSettings& peers) {
  const long long jobs = run.settings().quick ? kBullmqQuickJobs : peers.bullmq_jobs;
  const std::vector<RedisConfig> configs = redis_configs();
  const auto process_name = [&](const RedisConfig& config) {
    return "sluice FULL vs BullMQ, " + config.name + ": process " + std::to_string(jobs) + " jobs";
  };
  const auto enqueue_name = [&](const RedisConfig& config) {
    return "sluice FULL vs BullMQ, " + config.name + ": enqueue " + std::to_string(jobs) +
           " jobs in bulk";
  };
  std::vector<const RedisConfig*> wanted;
  for (const RedisConfig& config : configs) {
    if (run.wants(process_name(config)) || run.wants(enqueue_name(config))) {
      wanted.push_back(&config);
    }
  }
  if (wanted.empty()) return;
  run.guarded(process_name(*wanted.front()), [&] {
    require_bullmq_installed(peers);
    const Storage storage = file_storage(sluice::Synchronous::kFull);
    SideFigures sluice_best;
    std::vector<SideFigures> bullmq_best(wanted.size());
    std::vector<nlohmann::json> reports(wanted.size());
    for (int round = 0; round < run.rounds(); ++round) {
      const std::string sluice_path = run.scratch().fresh_database("sluice-side", storage);
      sluice_best.keep_best(sluice_side(sluice_path, sluice::Synchronous::kFull, jobs));
      ScratchDir::remove_database(sluice_path);
      for (std::size_t n = 0; n < wanted.size(); ++n) {
        const std::string app_path = run.scratch().fresh_database("bullmq-app", storage);
        {
          const RedisServer redis(peers.redis_server, run.scratch().fresh_directory("redis"),
                                  wanted[n]->settings);
          const BullmqRun bullmq = bullmq_side(peers, redis, *wanted[n], app_path, jobs);
          bullmq_best[n].keep_best(bullmq.figures);
          reports[n] = bullmq.report;
        }
        ScratchDir::remove_database(app_path);
      }
    }
    for (std::size_t n = 0; n < wanted.size(); ++n) {
      const std::string note = versions_note(reports[n], run.rounds());
      Result process = peer_row(process_name(*wanted[n]), jobs, sluice_best.process_per_s,
                                bullmq_best[n].process_per_s);
      process.figures.emplace_back(
          "wall_ratio", sluice_best.process_wall_per_s / bullmq_best[n].process_wall_per_s);
      if (wanted[n]->has_target) {
        process.target = "ratio >= 1";
        process.met = *process.ratio >= kBullmqProcessTarget;
      }
      process.note = note;
      run.add(process);
      Result enqueue = peer_row(enqueue_name(*wanted[n]), jobs, sluice_best.enqueue_per_s,
                                bullmq_best[n].enqueue_per_s);
      enqueue.note = note;
      run.add(enqueue);
    }
  });
}

}  // namespace bench
