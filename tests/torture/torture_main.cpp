// sluice-torture: runs the torture scenarios of issue 4 and prints one table row each.
// Usage: sluice-torture [--long] [--seed N] [--only SUBSTRING] [--cli PATH] [--corpus DIR]
//                      [--cuts N]   (cuts per power-box row, overriding its short or long count)
//                      [--jobs N]   (rows run at once, each in a process of its own; default 1)
// Exits non-zero if any row fails.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
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

ScenarioResult run_one(const NamedScenario& s, const SuiteConfig& config) {
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
  return result;
}

// Runs the rows `jobs` at a time, each in a forked process of its own: a row spends most of its
// time waiting on its children, its fsyncs and its sleeps, so rows side by side cost little more
// than one. Each row keeps its own temporary directory, ports and seed, as it does alone. A row
// whose process dies without printing is reported failed by name. Returns {passed, failed}.
std::pair<int, int> run_forked(const std::vector<const NamedScenario*>& rows,
                               const SuiteConfig& config, int jobs) {
  std::vector<std::pair<pid_t, const NamedScenario*>> running;
  int passed = 0;
  int failed = 0;
  auto reap_one = [&] {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) throw std::runtime_error("waitpid failed");
    for (auto it = running.begin(); it != running.end(); ++it) {
      if (it->first != pid) continue;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        ++passed;
      } else {
        ++failed;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 1) {
          ScenarioResult died;
          died.scenario = it->second->name;
          died.fail("its process ended without a result (status " + std::to_string(status) + ")");
          print_row(died, 0);
        }
      }
      running.erase(it);
      return;
    }
  };
  for (const NamedScenario* s : rows) {
    while (static_cast<int>(running.size()) >= jobs) reap_one();
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      // A suite killed by its time limit takes its rows with it.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const ScenarioResult result = run_one(*s, config);
      std::fflush(stdout);
      ::_exit(result.pass() ? 0 : 1);
    }
    running.emplace_back(pid, s);
  }
  while (!running.empty()) reap_one();
  return {passed, failed};
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
  int jobs = 1;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
        return argv[++i];
      };
      auto number = [&]() -> long long {
        const std::string text = value();
        std::size_t used = 0;
        try {
          const long long n = std::stoll(text, &used);
          if (used == text.size() && n >= 0) return n;
        } catch (const std::logic_error&) {
        }
        throw std::invalid_argument(arg + " needs a non-negative number, not '" + text + "'");
      };
      if (arg == "--long") {
        config.long_run = true;
      } else if (arg == "--seed") {
        config.seed = static_cast<std::uint64_t>(number());
      } else if (arg == "--only") {
        only = value();
      } else if (arg == "--cuts") {
        config.cuts = number();
      } else if (arg == "--cli") {
        config.cli_exe = value();
      } else if (arg == "--corpus") {
        config.corpus_dir = value();
      } else if (arg == "--jobs") {
        jobs = static_cast<int>(number());
        if (jobs < 1) throw std::invalid_argument("--jobs must be at least 1");
      } else {
        std::cerr << "usage: sluice-torture [--long] [--seed N] [--only NAME] [--cli PATH] "
                     "[--corpus DIR] [--cuts N] [--jobs N]\n";
        return 2;
      }
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "sluice-torture: " << e.what() << "\n";
    return 2;
  }
  if (!config.cli_exe.empty() && !std::filesystem::exists(config.cli_exe)) config.cli_exe.clear();

  std::printf("sluice torture suite (%s, seed %llu)\n", config.long_run ? "long" : "short",
              static_cast<unsigned long long>(config.seed));
  std::printf("| %-26s | %6s | %7s | %4s | %14s | %10s | %-9s | %-4s | %7s | %s\n", "scenario",
              "runs", "events", "lost", "double-applied", "unexpected", "integrity", "pass", "time",
              "notes");
  std::vector<const NamedScenario*> rows;
  for (const NamedScenario& s : scenarios()) {
    if (only.empty() || s.name.find(only) != std::string::npos) rows.push_back(&s);
  }
  int passed = 0;
  int failed = 0;
  if (jobs > 1) {
    std::tie(passed, failed) = run_forked(rows, config, jobs);
  } else {
    for (const NamedScenario* s : rows) (run_one(*s, config).pass() ? passed : failed) += 1;
  }
  std::printf("torture: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
