// How bad a finding is, for `sluice check` (its exit code) and the console (its colours).
#pragma once

namespace sluice::cli {

enum class Severity { kOk, kWarning, kProblem };

// "ok", "warning" or "problem".
inline const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::kOk:
      return "ok";
    case Severity::kWarning:
      return "warning";
    case Severity::kProblem:
      return "problem";
  }
  return "problem";
}

}  // namespace sluice::cli
