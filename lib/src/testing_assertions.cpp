// The testing kit's assertions: plain functions over the inspection API, so that a failure says
// what was expected and what the file held instead, under any test framework.
#include <climits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "sluice/inspect.hpp"
#include "sluice/testing.hpp"
#include "time_format.hpp"

namespace sluice::testing {
namespace {

using Json = nlohmann::json;

// Listing more events than this in a failure message hides the one that matters.
constexpr std::size_t kListedAtMost = 10;

Json parse_matcher_json(const std::string& text, const char* field) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw InvalidArgument(std::string("sluice::testing: EventMatcher::") + field +
                          " is not JSON: " + e.what());
  }
}

// The matcher with its JSON parsed once, validated before anything is read.
struct ParsedMatcher {
  explicit ParsedMatcher(const EventMatcher& m) : matcher(m) {
    if (m.topic.empty()) throw InvalidArgument("sluice::testing: EventMatcher::topic is empty");
    if (m.payload) payload = parse_matcher_json(*m.payload, "payload");
    if (m.payload_includes) {
      includes = parse_matcher_json(*m.payload_includes, "payload_includes");
      if (!includes->is_object()) {
        throw InvalidArgument(
            "sluice::testing: EventMatcher::payload_includes is not a JSON object");
      }
    }
  }

  bool matches(const Event& event) const {
    if (event.topic != matcher.topic) return false;
    if (matcher.key && event.key != *matcher.key) return false;
    if (matcher.dedup_key && event.dedup_key != *matcher.dedup_key) return false;
    if (!payload && !includes) return true;
    const Json actual = Json::parse(event.payload, nullptr, false);
    if (payload && actual != *payload) return false;
    if (includes) {
      if (!actual.is_object()) return false;
      for (const auto& [name, value] : includes->items()) {
        const auto found = actual.find(name);
        if (found == actual.end() || *found != value) return false;
      }
    }
    return true;
  }

  const EventMatcher& matcher;
  std::optional<Json> payload;
  std::optional<Json> includes;
};

std::vector<Event> events_after(SQLite::Database& db, std::int64_t after_seq) {
  return list_events(db, EventFilter{.after_seq = after_seq, .limit = INT_MAX});
}

std::string describe(const EventMatcher& m) {
  std::string text = "an event of topic '" + m.topic + "'";
  if (m.key) text += " with key '" + *m.key + "'";
  if (m.dedup_key) text += " with dedup key '" + *m.dedup_key + "'";
  if (m.payload) text += " with payload " + *m.payload;
  if (m.payload_includes) text += " with payload including " + *m.payload_includes;
  if (m.after_seq > 0) text += " enqueued after seq " + std::to_string(m.after_seq);
  return text;
}

std::string describe(const std::vector<Event>& events) {
  if (events.empty()) return "no event";
  std::ostringstream text;
  text << events.size() << " event(s):";
  for (std::size_t i = 0; i < events.size() && i < kListedAtMost; ++i) {
    const Event& e = events[i];
    text << "\n  seq " << e.seq << " " << e.topic;
    if (!e.key.empty()) text << " key '" << e.key << "'";
    if (!e.dedup_key.empty()) text << " dedup key '" << e.dedup_key << "'";
    text << " " << e.payload;
  }
  if (events.size() > kListedAtMost)
    text << "\n  ... and " << events.size() - kListedAtMost << " more";
  return text.str();
}

std::vector<Event> matching(const std::vector<Event>& events, const ParsedMatcher& parsed) {
  std::vector<Event> found;
  for (const Event& event : events) {
    if (parsed.matches(event)) found.push_back(event);
  }
  return found;
}

[[noreturn]] void fail(const SourceLocation& where, const std::string& message) {
  throw AssertionFailed(std::string(where.file_name()) + ":" + std::to_string(where.line()) +
                        ": sluice::testing: " + message);
}

// The event's delivery state for the consumer, if it has one, and a sentence saying it: "event E
// is retrying for C (attempt 2, next attempt at T, last error: E)".
std::pair<std::optional<DeliveryStatus>, std::string> actual_state(SQLite::Database& db,
                                                                   const std::string& consumer,
                                                                   const std::string& event_id) {
  Event event;
  try {
    event = find_event(db, event_id);
  } catch (const NotFound&) {
    return {std::nullopt, "there is no event with ID '" + event_id + "'"};
  }
  for (DeliveryStatus& status : delivery_statuses(db, event)) {
    if (status.consumer != consumer) continue;
    std::string said = "event " + event_id + " is " + status.state + " for " + consumer +
                       " (attempt " + std::to_string(status.attempts);
    if (status.next_attempt_at)
      said += ", next attempt at " + format_rfc3339(*status.next_attempt_at);
    if (!status.last_error.empty()) said += ", last error: " + status.last_error;
    return {std::move(status), said + ")"};
  }
  return {std::nullopt, "event " + event_id + " (topic " + event.topic + ") is not " + consumer +
                            "'s: it does not subscribe to the topic, or subscribed after the "
                            "event was enqueued"};
}

}  // namespace

std::vector<Event> find_enqueued(SQLite::Database& db, const EventMatcher& matcher) {
  const ParsedMatcher parsed(matcher);
  return matching(events_after(db, matcher.after_seq), parsed);
}

std::vector<Event> require_enqueued(SQLite::Database& db, const EventMatcher& matcher,
                                    SourceLocation where) {
  const ParsedMatcher parsed(matcher);
  const std::vector<Event> all = events_after(db, matcher.after_seq);
  std::vector<Event> found = matching(all, parsed);
  if (found.empty()) {
    fail(where, "expected " + describe(matcher) + "; found " + describe(all));
  }
  return found;
}

void require_not_enqueued(SQLite::Database& db, const EventMatcher& matcher, SourceLocation where) {
  const std::vector<Event> found = find_enqueued(db, matcher);
  if (!found.empty()) {
    fail(where, "expected no " + describe(matcher).substr(std::string("an ").size()) + "; found " +
                    describe(found));
  }
}

std::vector<Event> require_enqueued_by(SQLite::Database& db, const EventMatcher& matcher,
                                       const std::function<void()>& call, SourceLocation where) {
  EventMatcher since_call = matcher;
  since_call.after_seq = newest_event_seq(db);
  call();
  return require_enqueued(db, since_call, where);
}

void require_not_enqueued_by(SQLite::Database& db, const EventMatcher& matcher,
                             const std::function<void()>& call, SourceLocation where) {
  EventMatcher since_call = matcher;
  since_call.after_seq = newest_event_seq(db);
  call();
  require_not_enqueued(db, since_call, where);
}

std::vector<DeadLetter> dead_letters_of(SQLite::Database& db, const std::string& consumer) {
  return list_dead_letters(db, DeadLetterFilter{.consumer = consumer});
}

DeadLetter require_dead_lettered(SQLite::Database& db, const std::string& consumer,
                                 const std::string& event_id, SourceLocation where) {
  const std::vector<DeadLetter> dead = dead_letters_of(db, consumer);
  for (const DeadLetter& letter : dead) {
    if (letter.event_id == event_id) return letter;
  }
  std::string found;
  for (const DeadLetter& letter : dead) {
    found += "\n  " + letter.event_id + " (" + letter.reason + ": " + letter.last_error + ")";
  }
  fail(where, "expected a dead letter of event " + event_id + " for " + consumer + "; " +
                  actual_state(db, consumer, event_id).second + "; the consumer has " +
                  (dead.empty() ? std::string("no dead letters")
                                : std::to_string(dead.size()) + " dead letter(s):" + found));
}

DeliveryStatus require_delivered(SQLite::Database& db, const std::string& consumer,
                                 const std::string& event_id, SourceLocation where) {
  auto [status, said] = actual_state(db, consumer, event_id);
  if (!status || status->state != "delivered") {
    fail(where, "expected event " + event_id + " delivered to " + consumer + "; " + said);
  }
  return *status;
}

DeliveryStatus require_retrying(SQLite::Database& db, const std::string& consumer,
                                const std::string& event_id, std::optional<TimePoint> next_at,
                                SourceLocation where) {
  auto [status, said] = actual_state(db, consumer, event_id);
  const std::string expected = "expected event " + event_id + " retrying for " + consumer;
  if (!status || status->state != "retrying") fail(where, expected + "; " + said);
  if (next_at && status->next_attempt_at != next_at) {
    fail(where, expected + " with its next attempt at " + format_rfc3339(*next_at) + "; " + said);
  }
  return *status;
}

}  // namespace sluice::testing
