#include "console_api.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "dead_letter_page.hpp"
#include "fingerprint.hpp"
#include "format.hpp"
#include "health_checks.hpp"
#include "retention_views.hpp"
#include "sluice/audit.hpp"
#include "sluice/backfill.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "sluice/pause.hpp"
#include "sluice/retention.hpp"
#include "sluice/stats.hpp"
#include "sluice/workers.hpp"
#include "thread_read_connection.hpp"
#include "usage_error.hpp"

namespace sluice::cli {
namespace {

// Event IDs per library call of an action: well under SQLite's limit on bound parameters.
constexpr std::size_t kIdsPerCall = 500;
// The event IDs an action's answer lists; the count says how many there were.
constexpr std::size_t kIdsShown = 100;
constexpr int kMaxLimit = 1000;

ApiError bad_request(const std::string& message) { return ApiError(400, message); }

std::string join(const std::set<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

// Refuses a parameter the call does not know: a misspelt filter would otherwise match
// everything. `token` is the console's own (--token on a page load).
void check_params(const ApiParams& params, const std::set<std::string>& known) {
  for (const auto& [name, value] : params) {
    if (name == "token") continue;
    if (known.count(name) == 0) {
      throw bad_request("unknown parameter '" + name + "' (known: " + join(known) + ")");
    }
    if (params.count(name) > 1) throw bad_request("parameter '" + name + "' given twice");
  }
}

std::string text_param(const ApiParams& params, const std::string& name) {
  const auto found = params.find(name);
  return found == params.end() ? std::string() : found->second;
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.size() <= 18 &&
         text.find_first_not_of("0123456789") == std::string::npos;
}

long long number_param(const ApiParams& params, const std::string& name, long long fallback,
                       long long min, long long max) {
  const auto found = params.find(name);
  if (found == params.end()) return fallback;
  if (!all_digits(found->second) || std::stoll(found->second) < min ||
      std::stoll(found->second) > max) {
    throw bad_request("invalid " + name + " '" + found->second + "': expected an integer from " +
                      std::to_string(min) + " to " + std::to_string(max));
  }
  return std::stoll(found->second);
}

// Milliseconds since the epoch, an RFC 3339 time or a duration ago ("2h").
TimePoint parse_time_value(const std::string& name, const std::string& text) {
  if (all_digits(text)) return TimePoint(Duration(std::stoll(text)));
  try {
    return parse_time_or_ago(text, system_clock()->now());
  } catch (const UsageError& e) {
    throw bad_request("invalid " + name + ": " + e.what() + " (or milliseconds since the epoch)");
  }
}

std::optional<TimePoint> time_param(const ApiParams& params, const std::string& name) {
  const auto found = params.find(name);
  if (found == params.end() || found->second.empty()) return std::nullopt;
  return parse_time_value(name, found->second);
}

// The body of a POST: a JSON object with only the fields the call knows.
void check_body(const Json& body, const std::set<std::string>& known) {
  if (!body.is_object()) throw bad_request("the request body must be a JSON object");
  for (const auto& [name, value] : body.items()) {
    if (known.count(name) == 0) {
      throw bad_request("unknown field '" + name + "' (known: " + join(known) + ")");
    }
  }
}

bool has(const Json& body, const char* name) {
  return body.contains(name) && !body.at(name).is_null();
}

std::string text_field(const Json& body, const char* name) {
  if (!has(body, name)) return "";
  if (!body.at(name).is_string()) throw bad_request(std::string(name) + " must be a string");
  return body.at(name).get<std::string>();
}

bool flag_field(const Json& body, const char* name) {
  if (!has(body, name)) return false;
  if (!body.at(name).is_boolean()) throw bad_request(std::string(name) + " must be true or false");
  return body.at(name).get<bool>();
}

// A time in a body: milliseconds since the epoch, or a string as parse_time_value takes.
std::optional<TimePoint> time_field(const Json& body, const char* name) {
  if (!has(body, name)) return std::nullopt;
  const Json& value = body.at(name);
  if (value.is_number_integer()) return TimePoint(Duration(value.get<long long>()));
  if (value.is_string()) return parse_time_value(name, value.get<std::string>());
  throw bad_request(std::string(name) +
                    " must be milliseconds since the epoch or an RFC 3339 time");
}

long long millis(TimePoint t) { return t.time_since_epoch().count(); }

Json consumer_json(const ConsumerStats& stats) {
  Json json = consumer_stats_json(stats);
  // The names the console's contract gave these before it followed `stats --json`.
  json["name"] = stats.consumer;
  json["backlog"] = stats.pending;
  json["lag_ms"] = stats.lag.count();
  return json;
}

Json id_list(const std::vector<DeadLetter>& letters) {
  Json ids = Json::array();
  for (std::size_t i = 0; i < letters.size() && i < kIdsShown; ++i) {
    ids.push_back(letters[i].event_id);
  }
  return ids;
}

// The dead letters an action names: every one of `ids` (each must have one, for `consumer`
// when given), or every one with `fingerprint`. Throws before anything changes.
std::vector<DeadLetter> select_dead_letters(SQLite::Database& db, const Json& body) {
  DeadLetterFilter filter;
  filter.consumer = text_field(body, "consumer");
  const std::string fingerprint = text_field(body, "fingerprint");
  const bool by_ids = has(body, "ids");
  if (by_ids == !fingerprint.empty()) {
    throw bad_request(
        "name the dead letters: give \"ids\" (a list of event IDs) or "
        "\"fingerprint\", not both");
  }
  if (by_ids) {
    const Json& ids = body.at("ids");
    if (!ids.is_array() || ids.empty()) {
      throw bad_request("ids must be a non-empty list of event IDs");
    }
    for (const Json& id : ids) {
      if (!id.is_string()) throw bad_request("ids must be a list of event IDs (strings)");
      filter.event_ids.push_back(id.get<std::string>());
    }
  }
  std::vector<DeadLetter> all = list_dead_letters(db, filter);
  if (by_ids) {
    for (const std::string& id : filter.event_ids) {
      find_event(db, id);
      const bool has_match = std::any_of(all.begin(), all.end(),
                                         [&id](const DeadLetter& d) { return d.event_id == id; });
      if (!has_match) {
        throw NotFound("no dead letter for event " + id +
                       (filter.consumer.empty() ? "" : " and consumer " + filter.consumer));
      }
    }
    return all;
  }
  std::vector<DeadLetter> matched;
  for (DeadLetter& d : all) {
    if (error_fingerprint(d.last_error) == fingerprint) matched.push_back(std::move(d));
  }
  if (matched.empty()) {
    throw NotFound("no dead letter with fingerprint '" + fingerprint + "'" +
                   (filter.consumer.empty() ? "" : " for consumer " + filter.consumer));
  }
  return matched;
}

// What an action was applied to, for the audit log: the body without its mode switches.
std::string audit_filter(const Json& body) {
  Json filter = Json::object();
  for (const auto& [name, value] : body.items()) {
    if (name != "dry_run" && name != "note" && !value.is_null()) filter[name] = value;
  }
  return json_text(filter);
}

}  // namespace

ConsoleApi::ConsoleApi(Session session, bool read_only)
    : session_(std::move(session)), read_only_(read_only) {}

Json ConsoleApi::overview() const {
  SQLite::Database& db = thread_read_connection(session_);
  const TimePoint now = system_clock()->now();
  const std::vector<ConsumerStats> stats = consumer_stats(db, session_.options());
  // The rules `sluice check` applies, with its default limits: a row is coloured by its verdict.
  const std::vector<ConsumerHealth> health =
      read_consumer_health(db, stats, session_.options(), {}, now);
  Json consumers = Json::array();
  for (std::size_t i = 0; i < stats.size(); ++i) {
    Json consumer = consumer_json(stats[i]);
    consumer["health"] = consumer_health_json(health[i]);
    consumers.push_back(std::move(consumer));
  }
  return Json{{"consumers", consumers},
              {"check", checks_json(run_checks(db, session_.options(), stats))},
              {"now", millis(now)},
              {"read_only", read_only_}};
}

Json ConsoleApi::workers() const {
  SQLite::Database& db = thread_read_connection(session_);
  Json list = Json::array();
  for (const WorkerStatus& worker : list_workers(db, session_.options())) {
    Json json = worker_json(worker);
    json["started_at_ms"] = millis(worker.started_at);
    list.push_back(std::move(json));
  }
  return Json{{"workers", list}, {"now", millis(system_clock()->now())}};
}

Json ConsoleApi::events(const ApiParams& params) const {
  check_params(params, {"topic", "key", "id", "dedup_key", "since", "until", "after_seq", "limit",
                        "consumer", "state"});
  EventFilter filter;
  filter.topic = text_param(params, "topic");
  filter.key = text_param(params, "key");
  filter.event_id = text_param(params, "id");
  filter.dedup_key = text_param(params, "dedup_key");
  // Dedup keys are unique per topic, and indexed so: alone one would be looked for in every event.
  if (!filter.dedup_key.empty() && filter.topic.empty()) {
    throw bad_request("dedup_key needs topic: a dedup key is unique within its topic");
  }
  filter.consumer = text_param(params, "consumer");
  filter.state = text_param(params, "state");
  filter.since = time_param(params, "since");
  filter.until = time_param(params, "until");
  filter.after_seq = number_param(params, "after_seq", 0, 0, INT64_MAX / 2);
  const int limit = static_cast<int>(number_param(params, "limit", 50, 1, kMaxLimit));
  // One more than the page: whether there is a next page, without counting.
  filter.limit = limit + 1;
  SQLite::Database& db = thread_read_connection(session_);
  const auto events = list_events(db, filter);
  Json list = Json::array();
  for (int i = 0; i < limit && i < static_cast<int>(events.size()); ++i) {
    list.push_back(event_json(events[i]));
  }
  const bool more = static_cast<int>(events.size()) > limit;
  return Json{{"events", list},
              {"next_after_seq", more ? Json(events[limit - 1].seq) : Json(nullptr)}};
}

Json ConsoleApi::event(const std::string& id) const {
  SQLite::Database& db = thread_read_connection(session_);
  const Event e = find_event(db, id);
  Json deliveries = Json::array();
  for (const DeliveryStatus& status : delivery_statuses(db, e)) {
    deliveries.push_back(delivery_json(status));
  }
  Json attempts = Json::array();
  for (const AttemptRecord& attempt : attempt_history(db, e)) {
    attempts.push_back(attempt_json(attempt));
  }
  return Json{{"event", event_json(e)}, {"deliveries", deliveries}, {"attempts", attempts}};
}

Json ConsoleApi::dead_letters(const ApiParams& params) const {
  check_params(params,
               {"consumer", "topic", "fingerprint", "after", "limit", "groups", "group_offset"});
  DeadLetterPageQuery query;
  query.consumer = text_param(params, "consumer");
  query.topic = text_param(params, "topic");
  query.fingerprint = text_param(params, "fingerprint");
  query.after = number_param(params, "after", 0, 0, INT64_MAX / 2);
  query.limit = number_param(params, "limit", 100, 1, kMaxLimit);
  query.groups = number_param(params, "groups", 20, 1, kMaxLimit);
  query.group_offset = number_param(params, "group_offset", 0, 0, INT64_MAX / 2);
  SQLite::Database& db = thread_read_connection(session_);
  return dead_letter_page(db, query);
}

Json ConsoleApi::audit(const ApiParams& params) const {
  check_params(params, {"after", "limit"});
  const long long after = number_param(params, "after", 0, 0, INT64_MAX / 2);
  const int limit = static_cast<int>(number_param(params, "limit", 100, 1, kMaxLimit));
  SQLite::Database& db = thread_read_connection(session_);
  const auto entries = list_audit(db, after, limit + 1);
  Json list = Json::array();
  for (int i = 0; i < limit && i < static_cast<int>(entries.size()); ++i) {
    list.push_back(audit_entry_json(entries[i]));
  }
  const bool more = static_cast<int>(entries.size()) > limit;
  return Json{{"entries", list},
              {"next_after", more ? Json(entries[limit - 1].id) : Json(nullptr)}};
}

Json ConsoleApi::replay(const Json& body) { return dead_letter_action(body, true); }

Json ConsoleApi::discard(const Json& body) { return dead_letter_action(body, false); }

Json ConsoleApi::dead_letter_action(const Json& body, bool replay) {
  check_body(
      body,
      replay ? std::set<std::string>{"consumer", "ids", "fingerprint", "dry_run", "rate_per_second"}
             : std::set<std::string>{"consumer", "ids", "fingerprint", "dry_run", "note"});
  const bool dry_run = flag_field(body, "dry_run");
  const std::string note = replay ? "" : text_field(body, "note");
  if (!replay && note.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw bad_request("a discard needs a non-empty \"note\" saying why");
  }
  double rate = 0;
  if (has(body, "rate_per_second")) {
    const Json& value = body.at("rate_per_second");
    if (!value.is_number() || value.get<double>() <= 0) {
      throw bad_request("rate_per_second must be a number above 0, or null for no limit");
    }
    rate = value.get<double>();
  }
  std::optional<SQLite::Database> writer;
  SQLite::Database& db =
      dry_run ? thread_read_connection(session_) : writer.emplace(session_.open());
  const std::vector<DeadLetter> matched = select_dead_letters(db, body);
  long long changed = 0;
  if (!dry_run) {
    const Options options = session_.options();
    // One entry for the request, written in the transaction of its first change and kept in
    // step with each later one: a console killed mid-replay leaves no replay unrecorded.
    AuditEntry audit{.filter = audit_filter(body), .source = "console"};
    const auto apply = [&](const std::string& consumer, std::vector<std::string> ids) {
      const DeadLetterFilter filter{.event_ids = std::move(ids), .consumer = consumer};
      return replay ? replay_dead_letters(db, filter, options, {}, audit)
                    : discard_dead_letters(db, filter, note, options, {}, audit);
    };
    if (rate > 0) {
      // One at a time, paced, as `dlq replay --rate` does.
      const auto interval = std::chrono::milliseconds(static_cast<long long>(1000.0 / rate));
      for (const DeadLetter& d : matched) {
        if (changed > 0 && !pace(interval)) break;
        changed += apply(d.consumer, {d.event_id});
      }
    } else {
      // Per consumer, so an event dead for two consumers is changed only for the one matched;
      // the library works in short transactions, so a running worker is not held up.
      std::map<std::string, std::vector<std::string>> by_consumer;
      for (const DeadLetter& d : matched) by_consumer[d.consumer].push_back(d.event_id);
      for (auto& [consumer, ids] : by_consumer) {
        for (std::size_t i = 0; i < ids.size(); i += kIdsPerCall) {
          changed += apply(
              consumer,
              {ids.begin() + static_cast<std::ptrdiff_t>(i),
               ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), i + kIdsPerCall))});
        }
      }
    }
  }
  Json answer{{"count", dry_run ? static_cast<long long>(matched.size()) : changed},
              {"matched", matched.size()},
              {"events", id_list(matched)},
              {"dry_run", dry_run}};
  if (!replay) answer["note"] = note;
  return answer;
}

Json ConsoleApi::backfill(const Json& body) {
  check_body(body, {"consumer", "since", "until", "from_event", "dry_run"});
  const std::string consumer = text_field(body, "consumer");
  if (consumer.empty()) throw bad_request("backfill needs \"consumer\"");
  BackfillRange range;
  range.from_event_id = text_field(body, "from_event");
  range.since = time_field(body, "since");
  range.until = time_field(body, "until");
  if (range.since.has_value() == !range.from_event_id.empty()) {
    throw bad_request(
        "backfill needs \"since\" (a time) or \"from_event\" (an event ID), not both");
  }
  if (range.until && !range.since) throw bad_request("\"until\" needs \"since\"");
  const bool dry_run = flag_field(body, "dry_run");
  std::optional<SQLite::Database> writer;
  SQLite::Database& db =
      dry_run ? thread_read_connection(session_) : writer.emplace(session_.open());
  long long count = 0;
  if (dry_run) {
    count = count_backfill(db, consumer, range);
  } else {
    AuditEntry audit{.filter = audit_filter(body), .source = "console"};
    count = sluice::backfill(db, consumer, range, session_.options(), audit);
  }
  return Json{{"consumer", consumer}, {"count", count}, {"dry_run", dry_run}};
}

Json ConsoleApi::pause(const Json& body) {
  check_body(body, {"consumer", "for", "until", "note"});
  const std::string consumer = text_field(body, "consumer");
  if (consumer.empty()) throw bad_request("pause needs \"consumer\"");
  PauseOptions pause;
  pause.note = text_field(body, "note");
  pause.until = time_field(body, "until");
  if (const std::string length = text_field(body, "for"); !length.empty()) {
    if (pause.until) throw bad_request("pause takes \"for\" or \"until\", not both");
    Duration parsed{};
    try {
      parsed = parse_duration(length);
    } catch (const UsageError& e) {
      throw bad_request(std::string("invalid for: ") + e.what());
    }
    if (parsed <= Duration(0)) throw bad_request("\"for\" must be longer than 0");
    pause.until = system_clock()->now() + parsed;
  }
  SQLite::Database db = session_.open();
  AuditEntry audit{.source = "console"};
  try {
    pause_consumer(db, consumer, pause, session_.options(), audit);
  } catch (const InvalidArgument& e) {
    throw bad_request(e.what());
  }
  for (const ConsumerStats& stats : consumer_stats(db, session_.options())) {
    if (stats.consumer == consumer) return consumer_json(stats);
  }
  throw NotFound("sluice: consumer '" + consumer + "' is not in the file");
}

Json ConsoleApi::resume(const Json& body) {
  check_body(body, {"consumer"});
  const std::string consumer = text_field(body, "consumer");
  if (consumer.empty()) throw bad_request("resume needs \"consumer\"");
  SQLite::Database db = session_.open();
  AuditEntry audit{.source = "console"};
  const bool was_paused = resume_consumer(db, consumer, session_.options(), audit);
  for (const ConsumerStats& stats : consumer_stats(db, session_.options())) {
    if (stats.consumer != consumer) continue;
    Json json = consumer_json(stats);
    json["was_paused"] = was_paused;
    return json;
  }
  throw NotFound("sluice: consumer '" + consumer + "' is not in the file");
}

Json ConsoleApi::prune(const Json& body) {
  check_body(body, {"older_than", "force", "dry_run"});
  const std::string older_than = text_field(body, "older_than");
  if (older_than.empty())
    throw bad_request("prune needs \"older_than\", a retention such as \"7d\"");
  Duration retention{};
  try {
    retention = parse_duration(older_than);
  } catch (const UsageError& e) {
    throw bad_request(std::string("invalid older_than: ") + e.what());
  }
  const bool force = flag_field(body, "force");
  const bool dry_run = flag_field(body, "dry_run");
  std::optional<SQLite::Database> writer;
  SQLite::Database& db =
      dry_run ? thread_read_connection(session_) : writer.emplace(session_.open());
  const Options options = session_.options();
  const Duration horizon = dedup_horizon(db, options);
  if (retention < horizon && !force) {
    throw bad_request("refusing to prune: older_than " + format_duration(retention) +
                      " is under the dedup horizon " + format_duration(horizon) +
                      " (the longest retry span); set \"force\": true to prune anyway");
  }
  std::vector<RetentionHold> held_back;
  PruneOptions prune_options;
  prune_options.force = force;
  prune_options.dry_run = dry_run;
  prune_options.held_back = &held_back;
  AuditEntry audit{.filter = audit_filter(body), .source = "console"};
  const long long count = sluice::prune(db, retention, prune_options, options, audit);
  Json holds = Json::array();
  for (const RetentionHold& hold : held_back) holds.push_back(hold_json(hold));
  return Json{{"count", count},
              {"dry_run", dry_run},
              {"older_than", format_duration(retention)},
              {"dedup_horizon", format_duration(horizon)},
              {"held_back", holds}};
}

void ConsoleApi::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

bool ConsoleApi::pace(std::chrono::milliseconds interval) {
  std::unique_lock lock(mutex_);
  return !wake_.wait_for(lock, interval, [this] { return stopping_; });
}

}  // namespace sluice::cli
