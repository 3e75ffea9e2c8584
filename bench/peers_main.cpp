// sluice-peers-bench: sluice beside plainjob (npm, on better-sqlite3) and BullMQ (npm, on a
// redis-server it starts), run by Node.js from bench/peers, doing the same workload in one run;
// see peer_cases.hpp and bullmq_cases.hpp. Prints a table (or --json, as sluice-bench does);
// exits 1 if a target is missed, 2 if a side failed (Node.js, redis-server or the npm packages
// missing included); a --quick run exits 0 whenever it completes.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "bullmq_cases.hpp"
#include "peer_cases.hpp"
#include "result.hpp"
#include "run.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Measures sluice beside plainjob and BullMQ: the same jobs and handler."};
  bench::RunSettings settings;
  bench::PeerSettings peers;
  peers.peers_dir = SLUICE_PEERS_DIR;
  bool json = false;
  app.add_flag("--json", json, "Print the results as JSON instead of a table");
  app.add_flag("--quick", settings.quick, "200 jobs, one round, target not judged (smoke run)");
  app.add_option("--rounds", settings.rounds, "Measurements per side; the best counts")
      ->check(CLI::Range(1, 100));
  app.add_option("--jobs", peers.jobs,
                 "Jobs per side and round in the plainjob cases (default 50000)")
      ->check(CLI::Range(100LL, 10'000'000LL));
  app.add_option("--bullmq-jobs", peers.bullmq_jobs,
                 "Jobs per side and round in the BullMQ cases (default 5000)")
      ->check(CLI::Range(100LL, 10'000'000LL));
  app.add_option("--node", peers.node, "The Node.js executable (default: node in PATH)");
  app.add_option("--redis-server", peers.redis_server,
                 "The redis-server executable for BullMQ (default: redis-server in PATH)");
  app.add_option("--only", settings.only, "Only the cases whose name contains this");
  app.add_option("--peers-dir", peers.peers_dir,
                 "Where the *_side.mjs scripts and their node_modules are (default: the source's "
                 "bench/peers)");
  app.add_option("--dir", settings.dir, "Where to put the scratch databases (default: temp dir)");
  CLI11_PARSE(app, argc, argv);

  try {
    bench::Run run(settings);
    bench::run_peer_cases(run, peers);
    bench::run_bullmq_cases(run, peers);
    if (json) {
      bench::print_json(std::cout, run.results());
    } else {
      bench::print_table(std::cout, run.results());
    }
    if (settings.quick && !run.any_failed()) return 0;
    if (run.any_failed()) return 2;
    return run.all_targets_met() ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "sluice-peers-bench: " << error.what() << '\n';
    return 2;
  }
}
