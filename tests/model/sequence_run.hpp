// Runs one model sequence: the same operations on the real engine (a file, worker instances on
// borrowed connections, a ManualClock) and on the reference model, with every check after every
// step. Stops at the first step that breaks a promise.
#pragma once

#include <string>
#include <vector>

#include "operation.hpp"
#include "sequence_config.hpp"
#include "violation.hpp"

namespace sluice::model {

struct SequenceOutcome {
  // What the first failing step broke, in the order found; empty if every promise held.
  std::vector<Violation> violations;
  std::size_t failed_step = 0;
  // One line per step run, with what it did.
  std::vector<std::string> log;
  long long handler_calls = 0;
  // How often a circuit breaker opened (or opened again), as the model counts.
  long long breaker_openings = 0;
};

// Violations whose invariant starts with one of `ignored` are dropped and the sequence goes on:
// a known defect then does not hide the others.
SequenceOutcome run_sequence(const SequenceConfig& config, const std::vector<Operation>& ops,
                             const std::vector<std::string>& ignored = {});

}  // namespace sluice::model
