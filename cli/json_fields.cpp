#include "json_fields.hpp"

#include "fingerprint.hpp"
#include "format.hpp"

namespace sluice::cli {

Json time_json(const std::optional<TimePoint>& t) {
  return t ? Json(format_time(*t)) : Json(nullptr);
}

Json event_json(const Event& event) {
  Json headers = Json::object();
  for (const auto& [name, value] : event.headers) headers[name] = value;
  // The library validated the payload on enqueue; keep it verbatim should it ever not parse.
  Json payload = Json::parse(event.payload, nullptr, false);
  if (payload.is_discarded()) payload = event.payload;
  const std::string trace = trace_id(event);
  return Json{{"seq", event.seq},
              {"id", event.id},
              {"topic", event.topic},
              {"version", event.version},
              {"key", event.key},
              {"dedup_key", event.dedup_key},
              {"created_at", format_time(event.created_at)},
              {"not_before", time_json(event.not_before)},
              {"trace_id", trace.empty() ? Json(nullptr) : Json(trace)},
              {"headers", headers},
              {"payload", payload}};
}

std::string trace_id(const Event& event) {
  // "00-<trace id>-<parent id>-<flags>", validated wherever it entered the file.
  const std::optional<std::string> parent = event.trace_context();
  return parent && parent->size() >= 35 ? parent->substr(3, 32) : std::string();
}

Json delivery_json(const DeliveryStatus& status) {
  return Json{{"consumer", status.consumer},
              {"state", status.state},
              {"attempts", status.attempts},
              {"next_attempt_at", time_json(status.next_attempt_at)},
              {"delivered_at", time_json(status.delivered_at)},
              {"last_error", status.last_error}};
}

Json attempt_json(const AttemptRecord& attempt) {
  return Json{{"consumer", attempt.consumer},
              {"attempt", attempt.attempt},
              {"at", format_time(attempt.at)},
              {"outcome", attempt.outcome},
              {"error", attempt.error}};
}

Json dead_letter_json(const DeadLetter& dead_letter) {
  return Json{
      {"event_id", dead_letter.event_id},
      {"event_seq", dead_letter.event_seq},
      {"consumer", dead_letter.consumer},
      {"topic", dead_letter.topic},
      {"key", dead_letter.key},
      {"reason", dead_letter.reason},
      {"last_error", dead_letter.last_error},
      {"fingerprint", error_fingerprint(dead_letter.last_error)},
      {"attempts", dead_letter.attempts},
      {"first_failed_at", format_time(dead_letter.first_failed_at)},
      {"last_failed_at", format_time(dead_letter.last_failed_at)},
      {"discarded", dead_letter.discarded},
      {"note", dead_letter.note},
      {"trace_id", dead_letter.trace_id.empty() ? Json(nullptr) : Json(dead_letter.trace_id)}};
}

Json consumer_stats_json(const ConsumerStats& stats) {
  return Json{{"consumer", stats.consumer},
              {"topics", stats.topics},
              {"pending", stats.pending},
              {"claimed", stats.claimed},
              {"retrying", stats.retrying},
              {"dead", stats.dead},
              {"delivered_total", stats.delivered_total},
              {"retries_total", stats.retries_total},
              {"snoozed_total", stats.snoozed_total},
              {"lag_seconds", static_cast<double>(stats.lag.count()) / 1000.0},
              {"parked_keys", stats.parked_keys},
              {"waiting_for_handler", stats.waiting_for_handler},
              {"due", stats.due},
              {"throttled_total", stats.throttled_total},
              {"pause", pause_json(stats)},
              {"breaker", breaker_json(stats)}};
}

Json breaker_json(const ConsumerStats& stats) {
  if (stats.breaker == "off") return nullptr;
  return Json{{"state", stats.breaker},
              {"failures", stats.breaker_failures},
              {"open_until", time_json(stats.breaker_open_until)},
              {"cool_down_seconds", static_cast<double>(stats.breaker_cool_down.count()) / 1000.0}};
}

Json pause_json(const ConsumerStats& stats) {
  if (!stats.paused) return nullptr;
  return Json{{"since", format_time(stats.paused_since)},
              {"until", time_json(stats.paused_until)},
              {"by", stats.paused_by},
              {"note", stats.pause_note.empty() ? Json(nullptr) : Json(stats.pause_note)}};
}

Json held_claim_json(const HeldClaim& claim) {
  return Json{{"id", claim.id},
              {"consumer", claim.consumer},
              {"worker_id", claim.worker_id ? Json(*claim.worker_id) : Json(nullptr)},
              {"pid", claim.pid},
              {"since", format_time(claim.since)},
              {"lease_until", format_time(claim.lease_until)},
              {"owner_alive", claim.owner_alive}};
}

Json worker_json(const WorkerStatus& worker) {
  Json claims = Json::array();
  for (const HeldClaim& claim : worker.claims) claims.push_back(held_claim_json(claim));
  return Json{{"id", worker.id},
              {"pid", worker.pid},
              {"host", worker.host},
              {"kind", worker.kind},
              {"consumers", worker.consumers},
              {"started_at", format_time(worker.started_at)},
              {"liveness", liveness_name(worker.liveness)},
              {"claims", claims}};
}

Json consumer_health_json(const ConsumerHealth& health) {
  Json findings = Json::array();
  for (const HealthFinding& finding : health.findings) {
    findings.push_back(Json{{"check", finding.check}, {"detail", finding.detail}});
  }
  return Json{{"status", severity_name(health.severity)},
              {"findings", findings},
              {"live_workers", health.live_workers},
              {"maybe_live_worker", health.maybe_live_worker},
              {"last_seen_worker_at", time_json(health.last_seen_worker)}};
}

Json audit_entry_json(const AuditEntry& entry) {
  return Json{
      {"id", entry.id},         {"at", format_time(entry.at)},
      {"action", entry.action}, {"filter", Json::parse(entry.filter, nullptr, false)},
      {"count", entry.count},   {"note", entry.note.empty() ? Json(nullptr) : Json(entry.note)},
      {"source", entry.source}};
}

Json ingest_position_json(const IngestPosition& position) {
  return Json{{"stream", position.stream},
              {"durable", position.durable},
              {"stream_seq", position.stream_seq}};
}

std::string json_text(const Json& document, int indent) {
  return document.dump(indent, ' ', false, Json::error_handler_t::replace);
}

void print_json(std::ostream& out, const Json& document) { out << json_text(document, 2) << '\n'; }

void print_json_line(std::ostream& out, const Json& document) {
  out << json_text(document) << '\n' << std::flush;
}

}  // namespace sluice::cli
