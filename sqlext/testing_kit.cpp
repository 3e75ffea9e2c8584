#include "testing_kit.hpp"

#include <SQLiteCpp/Statement.h>

#include <nlohmann/json.hpp>

#include "consumer_registry.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"

namespace sluice::sqlext {
namespace {

std::optional<TimePoint> next_due_of(SQLite::Database& db, std::int64_t consumer, TimePoint now) {
  // Waiting rows (through the due index), and events not yet claimed whose not_before is ahead:
  // the claim step gives those a row only when it reaches them.
  SQLite::Statement query(
      db,
      "SELECT min(t) FROM (SELECT min(next_attempt_at) AS t FROM sluice_deliveries "
      "WHERE consumer_id = ?1 AND state = 'pending' AND next_attempt_at > ?2 UNION ALL "
      "SELECT min(e.not_before) FROM sluice_events e JOIN sluice_subscriptions s "
      "ON s.consumer_id = ?1 AND s.topic = e.topic AND e.seq > s.start_seq "
      "WHERE e.seq > (SELECT cursor FROM sluice_consumers WHERE id = ?1) AND e.not_before > ?2)");
  query.bind(1, static_cast<int64_t>(consumer));
  query.bind(2, static_cast<int64_t>(to_millis(now)));
  if (!query.executeStep() || query.getColumn(0).isNull()) return std::nullopt;
  return TimePoint(Duration(query.getColumn(0).getInt64()));
}

}  // namespace

std::optional<TimePoint> next_due(SqlConnection& c, const std::string& consumer) {
  return guarded("sluice_next_due", [&] {
    const TimePoint now = c.clock().now();
    std::vector<std::int64_t> ids;
    if (consumer.empty()) {
      SQLite::Statement all(c.db(), "SELECT id FROM sluice_consumers");
      while (all.executeStep()) ids.push_back(all.getColumn(0).getInt64());
    } else {
      ids.push_back(consumer_id(c.db(), consumer));
    }
    std::optional<TimePoint> earliest;
    for (const std::int64_t id : ids) {
      const auto due = next_due_of(c.db(), id, now);
      if (due && (!earliest || *due < *earliest)) earliest = due;
    }
    return earliest;
  });
}

std::string delivery_state(SqlConnection& c, const std::string& consumer,
                           const std::string& event_id) {
  return guarded("sluice_delivery_state", [&] {
    consumer_id(c.db(), consumer);  // NotFound naming an unknown consumer
    const Event event = find_event(c.db(), event_id);
    for (const DeliveryStatus& status : delivery_statuses(c.db(), event)) {
      if (status.consumer != consumer) continue;
      const auto millis = [](const std::optional<TimePoint>& t) {
        return t ? nlohmann::json(to_millis(*t)) : nlohmann::json(nullptr);
      };
      return nlohmann::json{
          {"state", status.state},
          {"attempts", status.attempts},
          {"next_attempt_at", millis(status.next_attempt_at)},
          {"delivered_at", millis(status.delivered_at)},
          {"last_error",
           status.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(status.last_error)}}
          .dump();
    }
    throw NotFound("sluice: sluice_delivery_state: event '" + event_id + "' (topic '" +
                   event.topic + "') is not for consumer '" + consumer +
                   "': it does not subscribe to the topic, or subscribed after the event was "
                   "enqueued");
  });
}

}  // namespace sluice::sqlext
