// Human one-line views of events, shared by `events` and `tail`.
#pragma once

#include <string>

#include "sluice/event.hpp"
#include "table.hpp"

namespace sluice::cli {

// The payload on one line, cut to `max_width` characters with "…".
std::string compact_payload(const Event& event, std::size_t max_width);

// The payload as indented JSON, every line indented by two spaces.
std::string pretty_payload(const Event& event);

// A table with columns SEQ, ID, TOPIC, KEY, CREATED, PAYLOAD.
Table event_table();
void add_event_row(Table& table, const Event& event);

}  // namespace sluice::cli
