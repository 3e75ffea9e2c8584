#include "shrink.hpp"

#include "sequence_run.hpp"

namespace sluice::model {

std::vector<Operation> shrink(const SequenceConfig& config, std::vector<Operation> ops,
                              const std::string& invariant, const std::vector<std::string>& ignored,
                              int max_runs) {
  int runs = 0;
  for (std::size_t chunk = ops.size() / 2; chunk >= 1 && runs < max_runs; chunk /= 2) {
    for (std::size_t start = 0; start < ops.size() && runs < max_runs;) {
      std::vector<Operation> fewer(ops.begin(), ops.begin() + static_cast<long>(start));
      const std::size_t end = std::min(ops.size(), start + chunk);
      fewer.insert(fewer.end(), ops.begin() + static_cast<long>(end), ops.end());
      ++runs;
      const SequenceOutcome outcome = run_sequence(config, fewer, ignored);
      if (!outcome.violations.empty() && outcome.violations.front().invariant == invariant) {
        // Operations after the failing one are never needed.
        fewer.resize(outcome.failed_step + 1);
        ops = std::move(fewer);
      } else {
        start = end;
      }
    }
  }
  return ops;
}

}  // namespace sluice::model
