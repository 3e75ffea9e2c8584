#include "sluice/options.hpp"

#include <string>

#include "sluice/error.hpp"

namespace sluice {
namespace {

void check_duration(Duration value, Duration least, const char* field) {
  if (value < least || value > Options::kLongestDuration) {
    throw InvalidArgument(std::string("sluice: Options.") + field + " is " +
                          std::to_string(value.count()) + " ms; it must be " +
                          (least.count() > 0 ? "positive" : "non-negative") +
                          " and at most 36500 days");
  }
}

}  // namespace

void Options::validate() const {
  check_duration(busy_timeout, Duration(0), "busy_timeout");
  // 0 would have an idle worker read the file in a loop.
  check_duration(poll_interval, Duration(1), "poll_interval");
  check_duration(batch_time_budget, Duration(0), "batch_time_budget");
  check_duration(claim_lease, Duration(0), "claim_lease");
  if (batch_size < 1) throw InvalidArgument("sluice: Options.batch_size must be >= 1");
  retry.validate();
}

}  // namespace sluice
