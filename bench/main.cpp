// sluice-bench: sluice against the floor (plain SQL doing the same row work) in one run.
// Prints a table (or --json) of every case with its ratio and target; exits 1 if a target is
// missed, 2 if a case failed with an error; a --quick run exits 0 whenever it completes.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "console_cases.hpp"
#include "consumer_count_cases.hpp"
#include "durable_claim_cases.hpp"
#include "foreign_writer_cases.hpp"
#include "idle_cases.hpp"
#include "latency_cases.hpp"
#include "result.hpp"
#include "run.hpp"
#include "scale_cases.hpp"
#include "throughput_cases.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Measures sluice against the floor: plain SQLite doing the same row work."};
  bench::RunSettings settings;
  bool json = false;
  app.add_flag("--json", json, "Print the results as JSON instead of a table");
  app.add_flag("--quick", settings.quick, "Tiny sizes, one round, targets not judged (CI smoke)");
  app.add_option("--only", settings.only, "Run only the cases whose name contains this text");
  app.add_option("--rounds", settings.rounds, "Measurements per compared pair; the best counts")
      ->check(CLI::Range(1, 100));
  app.add_option("--scale", settings.scale_events,
                 "Largest backlog of the scale and memory cases (default 1000000)")
      ->check(CLI::Range(10'000LL, 100'000'000LL));
  app.add_option("--dir", settings.dir, "Where to put the scratch databases (default: temp dir)");
  CLI11_PARSE(app, argc, argv);

  try {
    bench::Run run(settings);
    bench::run_throughput_cases(run);
    bench::run_consumer_count_cases(run);
    bench::run_durable_claim_cases(run);
    bench::run_latency_cases(run);
    bench::run_scale_cases(run);
    bench::run_idle_cases(run);
    bench::run_foreign_writer_cases(run);
    bench::run_console_cases(run);
    if (json) {
      bench::print_json(std::cout, run.results());
    } else {
      bench::print_table(std::cout, run.results());
    }
    if (settings.quick) return 0;
    if (run.any_failed()) return 2;
    return run.all_targets_met() ? 0 : 1;
  } catch (const std::exception& error) {
    std::cerr << "sluice-bench: " << error.what() << '\n';
    return 2;
  }
}
