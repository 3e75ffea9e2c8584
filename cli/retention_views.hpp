// Human and JSON views of what holds back pruning, shared by `prune` and `check`.
#pragma once

#include <string>

#include "json_fields.hpp"
#include "sluice/retention.hpp"

namespace sluice::cli {

// "consumer C keeps N event(s) <why>, the oldest AGE old", with the command that helps.
std::string describe_hold(const RetentionHold& hold, TimePoint now);

// consumer, reason, events, oldest.
Json hold_json(const RetentionHold& hold);

}  // namespace sluice::cli
