#include "retention_views.hpp"

#include "format.hpp"
#include "printable.hpp"

namespace sluice::cli {
namespace {

std::string why(const RetentionHold& hold) {
  switch (hold.reason) {
    case HoldReason::kCursor:
      return "past its cursor: no worker of it has taken them (if it is no longer run: sluice "
             "consumer remove " +
             hold.consumer + ")";
    case HoldReason::kClaim:
      return "inside a claim of its workers not finished (a worker of it recovers the claim of a "
             "dead process)";
    case HoldReason::kUnfinished:
      return "pending or claimed for it (retrying, delayed, held back or waiting for a handler)";
    case HoldReason::kDeadLetter:
      return "as dead letters (sluice dlq list --consumer " + hold.consumer + ")";
  }
  return {};
}

}  // namespace

std::string describe_hold(const RetentionHold& hold, TimePoint now) {
  return "consumer " + printable(hold.consumer) + " keeps " + std::to_string(hold.events) +
         " event(s), the "
         "oldest " +
         format_duration(now - hold.oldest) + " old, " + why(hold);
}

Json hold_json(const RetentionHold& hold) {
  return Json{{"consumer", hold.consumer},
              {"reason", to_string(hold.reason)},
              {"events", hold.events},
              {"oldest", format_time(hold.oldest)}};
}

}  // namespace sluice::cli
