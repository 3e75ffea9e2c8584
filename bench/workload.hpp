// The work every case does, the same for the floor and for sluice: one outbox-shaped event with
// a ~100-byte JSON payload, and one domain row written per delivery.
#pragma once

#include <string>
#include <vector>

namespace bench {

inline constexpr const char* kTopic = "order.placed";

// JSON objects of about 100 bytes, varying like real payloads do. Cases take event n's payload
// as payloads[n % size], built before the clock starts.
std::vector<std::string> sample_payloads();

// The app's own table that handlers write to.
inline constexpr const char* kDomainSchema =
    "CREATE TABLE IF NOT EXISTS bench_domain("
    "id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, payload TEXT NOT NULL)";
inline constexpr const char* kInsertDomainRow =
    "INSERT INTO bench_domain(event_id, payload) VALUES(?1, ?2)";

}  // namespace bench
