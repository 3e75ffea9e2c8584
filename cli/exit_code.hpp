// The CLI's exit codes and the one place that turns errors into them.
#pragma once

#include <exception>
#include <ostream>

namespace sluice::cli {

enum ExitCode : int {
  kExitOk = 0,
  // Something named was not found (the file, an event, a consumer, a dead letter), or `check`
  // found warnings.
  kExitNotFound = 1,
  kExitWarnings = 1,
  // Bad usage or input: unknown flag, malformed JSON, time or duration, a refused option.
  kExitUsage = 2,
  // The database failed: not an SQLite file, corrupt, newer schema, locked, I/O.
  kExitDatabase = 3,
  // `check` found problems (integrity, schema, an unusable file).
  kExitProblems = 4,
  // The file is SQLite but not ready for this sluice: no sluice tables (`sluice init`) or an
  // older schema (`sluice migrate`). Nothing was written.
  kExitNotReady = 5,
};

// The text `sluice --help` shows about exit codes.
extern const char* const kExitCodesHelp;

// Writes one line "sluice: <what went wrong>" to `err` and returns the exit code for `error`.
int report_error(std::exception_ptr error, std::ostream& err);

}  // namespace sluice::cli
