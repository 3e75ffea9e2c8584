// What the torture checks read from a sluice file beyond the ledger: the library's own reports
// (list_events, list_dead_letters, find_event) and, by SQL, the one thing the API does not expose
// (claim records left behind by a worker).
#pragma once

#include <SQLiteCpp/Database.h>

#include <set>
#include <string>

namespace sluice::torture {

// Claim records still in the file. A stopped or drained worker must leave none; a claim that
// outlives its worker is work nobody will finish until it is recovered.
long long claims_left(SQLite::Database& db);

// Events `consumer` reports delivered (list_events, state "delivered") with no row of its in the
// domain table: an event marked delivered without its effect.
long long delivered_without_effect(SQLite::Database& db, const std::string& consumer);

// Whether an event with this ID is stored (find_event).
bool event_stored(SQLite::Database& db, const std::string& event_id);

// Event IDs of the dead letters not discarded, over all consumers.
std::set<std::string> dead_letter_ids(SQLite::Database& db);

}  // namespace sluice::torture
