// sluice-torture: runs the torture scenarios of issue 4 and prints one table row each.
// Usage: sluice-torture [--long] [--seed N] [--only SUBSTRING] [--cli PATH] [--corpus DIR]
//                      [--cuts N]   (cuts per power-box row, overriding its short or long count)
// Exits non-zero if any row fails.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "scenario.hpp"

namespace sluice::torture {
namespace {

struct NamedScenario {
  std::string name;
  Scenario run;
};

const std::vector<NamedScenario>& scenarios() {
  static const std::vector<NamedScenario> all = {
      {"kill", run_kill_during_delivery},
      {"crash-points", run_crash_points},
      {"producer-crash", run_producer_crash},
      {"io-errors", run_io_error_sweep},
      {"disk-full", run_disk_full},
      {"contention", run_contention},
      {"poison", run_poison},
      {"clock", run_clock_jumps},
      {"order", run_per_key_order},
      {"corrupt", run_corrupt_files},
      {"power-full", run_power_loss_full},
      {"power-normal", run_power_loss_normal},
      {"hostile", run_hostile_payloads},
  };
  static const std::vector<NamedScenario> with_box = [] {
    std::vector<NamedScenario> list = all;
    for (const char* shape : {"outside1", "outside2", "sql", "relay-lib", "relay-cli", "checkpoint",
                              "prune", "replay", "boot", "migrate"}) {
      for (const bool full : {true, false}) {
        const std::string name = std::string("box-") + shape + (full ? "-full" : "-normal");
        list.push_back({name, [shape = std::string(shape), full](const SuiteConfig& config) {
                          return shape == "migrate" ? run_power_box_migration(config, full)
                                                    : run_power_box(config, shape, full);
                        }});
      }
    }
    return list;
  }();
  return with_box;
}

void print_row(const ScenarioResult& r, double seconds) {
  std::printf("| %-26s | %6lld | %7lld | %4lld | %14lld | %10lld | %-9s | %-4s | %6.1fs | %s\n",
              r.scenario.c_str(), r.runs, r.events, r.lost, r.double_applied, r.unexpected,
              r.integrity.c_str(), r.pass() ? "PASS" : "FAIL", seconds, r.notes.c_str());
  for (const std::string& why : r.failures) std::printf("|   ! %s\n", why.c_str());
  std::fflush(stdout);
}

}  // namespace
}  // namespace sluice::torture

int main(int argc, char** argv) {
  using namespace sluice::torture;
  SuiteConfig config;
  const std::string dir = executable_dir();
  config.child_exe = dir + "/sluice-torture-child";
  config.corpus_dir = std::string(SLUICE_TORTURE_SOURCE_DIR) + "/corpus";
  config.golden_file = std::string(SLUICE_TORTURE_SOURCE_DIR) + "/../golden/v4.sluice";
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--long") {
      config.long_run = true;
    } else if (arg == "--seed") {
      config.seed = std::stoull(value());
    } else if (arg == "--only") {
      only = value();
    } else if (arg == "--cuts") {
      config.cuts = std::stoll(value());
    } else if (arg == "--cli") {
      config.cli_exe = value();
    } else if (arg == "--corpus") {
      config.corpus_dir = value();
    } else {
      std::cerr << "usage: sluice-torture [--long] [--seed N] [--only NAME] [--cli PATH] "
                   "[--corpus DIR] [--cuts N]\n";
      return 2;
    }
  }
  if (!config.cli_exe.empty() && !std::filesystem::exists(config.cli_exe)) config.cli_exe.clear();

  std::printf("sluice torture suite (%s, seed %llu)\n", config.long_run ? "long" : "short",
              static_cast<unsigned long long>(config.seed));
  std::printf("| %-26s | %6s | %7s | %4s | %14s | %10s | %-9s | %-4s | %7s | %s\n", "scenario",
              "runs", "events", "lost", "double-applied", "unexpected", "integrity", "pass", "time",
              "notes");
  int passed = 0;
  int failed = 0;
  for (const NamedScenario& s : scenarios()) {
    if (!only.empty() && s.name.find(only) == std::string::npos) continue;
    const auto start = std::chrono::steady_clock::now();
    ScenarioResult result;
    try {
      result = s.run(config);
    } catch (const std::exception& e) {
      result.scenario = s.name;
      result.fail(std::string("scenario threw: ") + e.what());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    print_row(result, seconds);
    (result.pass() ? passed : failed) += 1;
  }
  std::printf("torture: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
