#include "peer_cases.hpp"

#include <sqlite3.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "node_script.hpp"
#include "peer_side.hpp"
#include "workload.hpp"

namespace bench {
namespace {

constexpr double kProcessTarget = 25.0;
constexpr long long kQuickJobs = 200;

// What plainjob_side.mjs reported, after checking it did the whole workload.
struct PlainjobRun {
  SideFigures figures;
  nlohmann::json report;
};

PlainjobRun plainjob_side(const PeerSettings& peers, const std::string& path, long long jobs) {
  const nlohmann::json config = {
      {"path", path}, {"jobs", jobs}, {"topic", kTopic}, {"domain_schema", kDomainSchema}};
  const std::string script =
      (std::filesystem::path(peers.peers_dir) / "plainjob_side.mjs").string();
  const std::string output = run_node_script(peers.node, script, {config.dump()});
  PlainjobRun run;
  try {
    run.report = nlohmann::json::parse(output);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("bench: plainjob_side.mjs printed no JSON: " + output);
  }
  const long long expected_bytes = payload_bytes(jobs);
  if (run.report.value("done", -1LL) != jobs || run.report.value("domain_rows", -1LL) != jobs ||
      run.report.value("payload_bytes", -1LL) != expected_bytes) {
    throw std::runtime_error("bench: plainjob did not do the workload (" + std::to_string(jobs) +
                             " jobs, " + std::to_string(expected_bytes) +
                             " payload bytes): " + run.report.dump());
  }
  run.figures.enqueue_per_s = jobs / run.report.at("enqueue_unstolen_seconds").get<double>();
  run.figures.process_per_s = jobs / run.report.at("process_unstolen_seconds").get<double>();
  run.figures.process_wall_per_s = jobs / run.report.at("process_seconds").get<double>();
  return run;
}

void require_installed(const PeerSettings& peers) {
  const std::filesystem::path modules = std::filesystem::path(peers.peers_dir) / "node_modules";
  for (const char* package : {"plainjob", "better-sqlite3"}) {
    if (!std::filesystem::exists(modules / package)) {
      throw std::runtime_error("bench: " + (modules / package).string() +
                               " is missing: run `make peers-deps` (npm ci in " + peers.peers_dir +
                               ", as bench/README.md says)");
    }
  }
}

}  // namespace

void run_peer_cases(Run& run, const PeerSettings& peers) {
  const long long jobs = run.settings().quick ? kQuickJobs : peers.jobs;
  const std::string process_name =
      "sluice vs plainjob: process " + std::to_string(jobs) + " jobs file NORMAL";
  const std::string enqueue_name =
      "sluice vs plainjob: enqueue " + std::to_string(jobs) + " jobs in bulk file NORMAL";
  if (!run.wants(process_name) && !run.wants(enqueue_name)) return;
  run.guarded(process_name, [&] {
    require_installed(peers);
    const Storage storage = file_storage(sluice::Synchronous::kNormal);
    SideFigures sluice_best;
    SideFigures plainjob_best;
    nlohmann::json report;
    for (int round = 0; round < run.rounds(); ++round) {
      const std::string sluice_path = run.scratch().fresh_database("sluice-side", storage);
      const SideFigures sluice = sluice_side(sluice_path, sluice::Synchronous::kNormal, jobs);
      ScratchDir::remove_database(sluice_path);
      const std::string plainjob_path = run.scratch().fresh_database("plainjob-side", storage);
      const PlainjobRun plainjob = plainjob_side(peers, plainjob_path, jobs);
      ScratchDir::remove_database(plainjob_path);
      report = plainjob.report;
      sluice_best.keep_best(sluice);
      plainjob_best.keep_best(plainjob.figures);
    }
    const std::string versions =
        "floor = plainjob " + report.value("plainjob", "?") + " on better-sqlite3 " +
        report.value("better_sqlite3", "?") + " (SQLite " + report.value("sqlite_version", "?") +
        ", journal " + report.value("journal_mode", "?") + ", synchronous " +
        std::to_string(report.value("synchronous", -1)) + "); sluice on SQLite " +
        sqlite3_libversion() + "; wall time less run-queue wait, best of " +
        std::to_string(run.rounds());
    Result process =
        peer_row(process_name, jobs, sluice_best.process_per_s, plainjob_best.process_per_s);
    process.figures.emplace_back("wall_ratio",
                                 sluice_best.process_wall_per_s / plainjob_best.process_wall_per_s);
    process.target = "ratio >= 25";
    process.met = *process.ratio >= kProcessTarget;
    process.note = versions;
    run.add(process);
    Result enqueue =
        peer_row(enqueue_name, jobs, sluice_best.enqueue_per_s, plainjob_best.enqueue_per_s);
    enqueue.note = versions;
    run.add(enqueue);
  });
}

}  // namespace bench
