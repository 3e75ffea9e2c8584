// Validation of incoming events and conversion between Event and its row.
#pragma once

#include <SQLiteCpp/Column.h>
#include <SQLiteCpp/Statement.h>

#include <string>

#include "sluice/event.hpp"

namespace sluice {

// The columns read_event() expects, in order, for a table aliased `e`.
inline constexpr const char* kEventColumns =
    "e.seq, e.id, e.topic, e.payload, e.headers, e.key, e.dedup_key, e.not_before, e.created_at, "
    "e.version";
inline constexpr int kEventColumnCount = 10;

// Reads an Event from `row`, whose columns from `first` on are kEventColumns.
Event read_event(SQLite::Statement& row, int first = 0);

// Throws InvalidArgument naming the field if `event` cannot be stored under `max_payload_bytes`.
void validate_new_event(const NewEvent& event, std::size_t max_payload_bytes);

// JSON object text of `headers`, or "" when there are none.
std::string encode_headers(const Headers& headers);

}  // namespace sluice
