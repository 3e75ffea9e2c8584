// Test support: Prometheus's own linter, `promtool check metrics`, run on an exposition, so the
// tests check the format against the real consumer of it (Debian's `prometheus` package).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>

#include "child_process.hpp"

namespace sluice::test {

// The promtool found on PATH; throws if there is none (scripts/install-deps installs it).
inline std::string promtool_path() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir) / "promtool";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  throw std::runtime_error("promtool is not on PATH (scripts/install-deps installs prometheus)");
}

// `promtool check metrics` on `exposition`: exit code 0 when it is valid and lint-clean, and what
// promtool said otherwise.
inline ProcessResult promtool_check_metrics(const std::string& exposition) {
  return run_process({promtool_path(), "check", "metrics"}, {}, exposition);
}

}  // namespace sluice::test
