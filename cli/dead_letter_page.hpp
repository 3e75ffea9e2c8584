// The console's dead-letter page, grouped and paged in SQL: the groups of failures (one error
// fingerprint of one consumer and topic) with the most dead letters, a keyset page of the dead
// letters, and the keys they park. The answer stays small whatever the file holds: grouping
// 100,000 dead letters with distinct errors in C++ answered 23.5 MB and held 835 MB.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <string>

#include "json_fields.hpp"

namespace sluice::cli {

struct DeadLetterPageQuery {
  // Only this consumer's, topic's, or error fingerprint's dead letters; empty for all.
  std::string consumer;
  std::string topic;
  std::string fingerprint;
  // The letters after this event seq (keyset), at most `limit` of them, plus the rest of the
  // last one's event (its dead letters for other consumers).
  std::int64_t after = 0;
  std::int64_t limit = 100;
  // The groups with the most dead letters, ranks group_offset + 1 to group_offset + groups.
  std::int64_t groups = 20;
  std::int64_t group_offset = 0;
  // At most this many parked keys.
  std::int64_t parked_keys = 100;
};

// {groups, groups_total, dead_letters_total, letters, next_after, parked_keys,
// parked_keys_total} for `query`, read from `db` (which gains the SQL function
// sluice_fingerprint). Throws NotFound for an unknown consumer.
Json dead_letter_page(SQLite::Database& db, const DeadLetterPageQuery& query);

}  // namespace sluice::cli
