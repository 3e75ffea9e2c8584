// The one statement that records a handler's throttle (Outcome::kThrottle) on its consumer's row,
// for the engine's workers and the SQL extension's consumers alike.
#pragma once

namespace sluice {

// A throttle pauses the consumer unless an operator's pause is in force (?1 the consumer's id, ?2
// now, ?3 the throttle's end, ?4 its reason or NULL, ?5 how many events asked for it); one in
// force already by a throttle lasts to the later end and keeps its start. Every SET
// reads the row as it was before the statement.
inline constexpr const char* kThrottleConsumerSql =
    "UPDATE sluice_consumers SET throttled_total = throttled_total + ?5, "
    "paused_at = CASE WHEN paused_at IS NOT NULL AND (paused_until IS NULL OR paused_until > ?2) "
    "THEN paused_at ELSE ?2 END, "
    "paused_until = CASE WHEN paused_at IS NULL OR paused_until <= ?2 THEN ?3 WHEN paused_by = "
    "'operator' THEN paused_until ELSE max(paused_until, ?3) END, "
    "pause_note = CASE WHEN paused_by = 'operator' AND paused_at IS NOT NULL AND (paused_until IS "
    "NULL OR paused_until > ?2) THEN pause_note ELSE ?4 END, "
    "paused_by = CASE WHEN paused_by = 'operator' AND paused_at IS NOT NULL AND (paused_until IS "
    "NULL OR paused_until > ?2) THEN 'operator' ELSE 'throttle' END "
    "WHERE id = ?1";

}  // namespace sluice
