// The health checks behind `sluice check` and the console's overview.
#pragma once

#include <string>
#include <vector>

#include "json_fields.hpp"
#include "session.hpp"

namespace sluice::cli {

enum class Severity { kOk, kWarning, kProblem };

// "ok", "warning" or "problem".
const char* severity_name(Severity severity);

struct CheckResult {
  std::string name;
  Severity severity;
  std::string detail;
};

// Every check on the session's file, read-only; a file that does not open is one problem.
// `with_integrity`: run PRAGMA integrity_check, which reads the whole file (seconds on a large
// one), so the console's overview, polled every 2 s, leaves it to `sluice check`.
std::vector<CheckResult> run_checks(const Session& session, bool with_integrity = true);

Severity worst_severity(const std::vector<CheckResult>& results);

// {status, checks: [{name, status, detail}]}: `sluice check --json`.
Json checks_json(const std::vector<CheckResult>& results);

}  // namespace sluice::cli
