#include "dead_letter_page.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include "fingerprint.hpp"
#include "format.hpp"
#include "sluice/error.hpp"

namespace sluice::cli {
namespace {

// sluice_fingerprint(error): error_fingerprint in SQL, so dead letters group where they lie.
void fingerprint_function(sqlite3_context* context, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_null(context);
    return;
  }
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(argv[0]));
  const std::string fingerprint = error_fingerprint(
      std::string_view(text, static_cast<std::size_t>(sqlite3_value_bytes(argv[0]))));
  sqlite3_result_text(context, fingerprint.data(), static_cast<int>(fingerprint.size()),
                      SQLITE_TRANSIENT);
}

TimePoint time_at(const SQLite::Column& column) { return TimePoint(Duration(column.getInt64())); }

// The dead letters the page's filters match: `d` deliveries, `e` events, `c` consumers; binds
// :consumer, :topic and :fingerprint when they are set.
class Matching {
 public:
  Matching(SQLite::Database& db, const DeadLetterPageQuery& query) : query_(query) {
    if (!query.consumer.empty()) {
      SQLite::Statement find(db, "SELECT id FROM sluice_consumers WHERE name = ?");
      find.bind(1, query.consumer);
      if (!find.executeStep()) {
        throw NotFound("sluice: no consumer named '" + query.consumer + "'");
      }
      consumer_id_ = find.getColumn(0).getInt64();
    }
  }

  // FROM ... WHERE ... for the dead letters matched; `fingerprinted` adds the fingerprint's.
  // Without `with_events`, `e` is joined only for a topic filter: each dead letter's event is a
  // page of its own on a large file (10k dead letters: 10k random reads).
  std::string from(bool fingerprinted = true, bool with_events = true) const {
    const bool join_events = with_events || !query_.topic.empty();
    std::string sql = std::string(" FROM sluice_deliveries d ") +
                      (join_events ? "JOIN sluice_events e ON e.seq = d.event_seq " : "") +
                      "JOIN sluice_consumers c ON c.id = d.consumer_id WHERE d.state = 'dead'";
    if (consumer_id_ != 0) sql += " AND d.consumer_id = :consumer";
    if (!query_.topic.empty()) sql += " AND e.topic = :topic";
    if (fingerprinted && !query_.fingerprint.empty()) {
      sql += " AND sluice_fingerprint(d.last_error) = :fingerprint";
    }
    return sql;
  }

  void bind(SQLite::Statement& statement) const {
    const auto bind_if = [&statement](const char* name, const auto& value) {
      if (statement.getIndex(name) > 0) {
        statement.bind(name, value);
      }
    };
    bind_if(":consumer", static_cast<int64_t>(consumer_id_));
    bind_if(":topic", query_.topic);
    bind_if(":fingerprint", query_.fingerprint);
  }

 private:
  const DeadLetterPageQuery& query_;
  std::int64_t consumer_id_ = 0;
};

// The groups with the most dead letters, with how many groups and dead letters match in all
// (window functions over the grouped rows: one pass over the dead letters).
void add_groups(SQLite::Database& db, const Matching& matching, const DeadLetterPageQuery& query,
                Json& page) {
  SQLite::Statement groups(
      db,
      "SELECT sluice_fingerprint(d.last_error) AS fingerprint, c.name, e.topic, count(*) AS n, "
      "min(d.first_failed_at), max(d.last_failed_at), min(d.event_seq), d.consumer_id, "
      "count(*) OVER (), sum(count(*)) OVER ()" +
          matching.from() +
          " GROUP BY fingerprint, d.consumer_id, e.topic ORDER BY n DESC, fingerprint, c.name, "
          "e.topic LIMIT :limit OFFSET :offset");
  matching.bind(groups);
  groups.bind(":limit", static_cast<int64_t>(query.groups));
  groups.bind(":offset", static_cast<int64_t>(query.group_offset));
  // A sample error: the group's dead letter of the lowest event seq, by its primary key.
  SQLite::Statement sample(
      db, "SELECT last_error FROM sluice_deliveries WHERE event_seq = ? AND consumer_id = ?");
  Json list = Json::array();
  long long groups_total = 0;
  long long letters_total = 0;
  while (groups.executeStep()) {
    sample.reset();
    sample.bind(1, groups.getColumn(6).getInt64());
    sample.bind(2, groups.getColumn(7).getInt64());
    sample.executeStep();
    list.push_back(Json{{"fingerprint", groups.getColumn(0).getString()},
                        {"consumer", groups.getColumn(1).getString()},
                        {"topic", groups.getColumn(2).getString()},
                        {"count", groups.getColumn(3).getInt64()},
                        {"first_seen", format_time(time_at(groups.getColumn(4)))},
                        {"last_seen", format_time(time_at(groups.getColumn(5)))},
                        {"sample_error", sample.getColumn(0).getString()}});
    groups_total = groups.getColumn(8).getInt64();
    letters_total = groups.getColumn(9).getInt64();
  }
  if (list.empty() && query.group_offset > 0) {
    // Past the last group: the totals still say what there is.
    SQLite::Statement totals(db, "SELECT count(*), coalesce(sum(n), 0) FROM (SELECT count(*) AS n" +
                                     matching.from() +
                                     " GROUP BY sluice_fingerprint(d.last_error), d.consumer_id, "
                                     "e.topic)");
    matching.bind(totals);
    totals.executeStep();
    groups_total = totals.getColumn(0).getInt64();
    letters_total = totals.getColumn(1).getInt64();
  }
  page["groups"] = std::move(list);
  page["groups_total"] = groups_total;
  page["dead_letters_total"] = letters_total;
}

constexpr const char* kLetterColumns =
    "SELECT e.id, e.seq, c.name, e.topic, e.key, d.reason, d.last_error, d.attempts, "
    "d.first_failed_at, d.last_failed_at, d.consumer_id";

DeadLetter read_letter(SQLite::Statement& row) {
  DeadLetter letter;
  letter.event_id = row.getColumn(0).getString();
  letter.event_seq = row.getColumn(1).getInt64();
  letter.consumer = row.getColumn(2).getString();
  letter.topic = row.getColumn(3).getString();
  letter.key = row.getColumn(4).getString();
  letter.reason = row.getColumn(5).getString();
  letter.last_error = row.getColumn(6).getString();
  letter.attempts = row.getColumn(7).getInt();
  letter.first_failed_at = time_at(row.getColumn(8));
  letter.last_failed_at = time_at(row.getColumn(9));
  return letter;
}

// A keyset page on event seq: all of an event's dead letters (one per consumer) on one page.
void add_letters(SQLite::Database& db, const Matching& matching, const DeadLetterPageQuery& query,
                 Json& page) {
  SQLite::Statement select(db, std::string(kLetterColumns) + matching.from() +
                                   " AND d.event_seq > :after ORDER BY d.event_seq, "
                                   "d.consumer_id LIMIT :limit");
  matching.bind(select);
  select.bind(":after", static_cast<int64_t>(query.after));
  select.bind(":limit", static_cast<int64_t>(query.limit + 1));
  std::vector<DeadLetter> letters;
  while (select.executeStep()) letters.push_back(read_letter(select));
  bool more = false;
  if (static_cast<std::int64_t>(letters.size()) > query.limit) {
    more = true;
    const std::int64_t last_seq = letters[static_cast<std::size_t>(query.limit) - 1].event_seq;
    std::erase_if(letters, [last_seq](const DeadLetter& d) { return d.event_seq >= last_seq; });
    // The last event's dead letters, all of them, by the primary key.
    SQLite::Statement last(db, std::string(kLetterColumns) + matching.from() +
                                   " AND d.event_seq = :seq ORDER BY d.consumer_id");
    matching.bind(last);
    last.bind(":seq", static_cast<int64_t>(last_seq));
    while (last.executeStep()) letters.push_back(read_letter(last));
    SQLite::Statement later(db, "SELECT 1" + matching.from() + " AND d.event_seq > :seq LIMIT 1");
    matching.bind(later);
    later.bind(":seq", static_cast<int64_t>(last_seq));
    more = later.executeStep();
  }
  Json list = Json::array();
  for (const DeadLetter& d : letters) list.push_back(dead_letter_json(d));
  page["letters"] = std::move(list);
  page["next_after"] = more ? Json(letters.back().event_seq) : Json(nullptr);
}

// Keys held back behind a dead letter of an ordered consumer, whatever its error fingerprint,
// with the dead letter that parks each: the earliest of its key.
void add_parked_keys(SQLite::Database& db, const Matching& matching,
                     const DeadLetterPageQuery& query, Json& page) {
  SQLite::Statement parked(
      db, "SELECT c.name, d.key, min(d.event_seq), count(*) OVER ()" + matching.from(false, false) +
              " AND d.key IS NOT NULL AND c.ordered GROUP BY d.consumer_id, d.key ORDER BY "
              "c.name, d.key LIMIT :limit");
  matching.bind(parked);
  parked.bind(":limit", static_cast<int64_t>(query.parked_keys));
  SQLite::Statement event_id(db, "SELECT id FROM sluice_events WHERE seq = ?");
  Json list = Json::array();
  long long total = 0;
  while (parked.executeStep()) {
    event_id.reset();
    event_id.bind(1, parked.getColumn(2).getInt64());
    event_id.executeStep();
    list.push_back(Json{{"consumer", parked.getColumn(0).getString()},
                        {"key", parked.getColumn(1).getString()},
                        {"parked_by_event_id", event_id.getColumn(0).getString()}});
    total = parked.getColumn(3).getInt64();
  }
  page["parked_keys"] = std::move(list);
  page["parked_keys_total"] = total;
}

}  // namespace

Json dead_letter_page(SQLite::Database& db, const DeadLetterPageQuery& query) {
  sqlite3_create_function_v2(db.getHandle(), "sluice_fingerprint", 1,
                             SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, fingerprint_function,
                             nullptr, nullptr, nullptr);
  const Matching matching(db, query);
  Json page = Json::object();
  add_groups(db, matching, query, page);
  add_letters(db, matching, query, page);
  add_parked_keys(db, matching, query, page);
  return page;
}

}  // namespace sluice::cli
