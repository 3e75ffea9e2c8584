// Shrinks a failing model sequence: drops operations while the same invariant still breaks, so
// that the report shows a short operation log.
#pragma once

#include <vector>

#include "operation.hpp"
#include "sequence_config.hpp"

namespace sluice::model {

// Operations of `ops` (which break `invariant` under `config`) without those not needed to break
// it, found by removing runs of operations, halving their length, within `max_runs` re-runs.
std::vector<Operation> shrink(const SequenceConfig& config, std::vector<Operation> ops,
                              const std::string& invariant, const std::vector<std::string>& ignored,
                              int max_runs);

}  // namespace sluice::model
