// The console's JSON API (GET and POST /api/...), apart from HTTP: each call takes the query
// parameters or the JSON body and returns the answer's document. docs/operating.md lists the
// fields; they are the CLI's --json fields.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "json_fields.hpp"
#include "session.hpp"

namespace sluice::cli {

// Bad input to the API: answered with `status` (4xx) and {"error": what()}.
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// A request's query parameters (a name may repeat).
using ApiParams = std::multimap<std::string, std::string>;

// Thread-safe: every call opens its own connections, read-only for the GET calls, so they never
// write. Throws ApiError for bad input, before anything is changed, and the library's errors
// (NotFound for an unknown consumer or event, InvalidArgument, DatabaseError).
class ConsoleApi {
 public:
  // `read_only` is reported by overview() and session(); the HTTP layer refuses the actions.
  ConsoleApi(Session session, bool read_only);

  // GET /api/overview: {consumers, check, now, read_only}; each consumer has its health
  // (consumer_health.hpp, the rules of `sluice check` at their default limits).
  Json overview() const;
  // GET /api/workers: {workers, now}; `sluice workers --json`'s fields, and started_at_ms.
  Json workers() const;
  // GET /api/events: {events, next_after_seq}; a keyset page on seq.
  Json events(const ApiParams& params) const;
  // GET /api/events/{id}: {event, deliveries, attempts}.
  Json event(const std::string& id) const;
  // GET /api/dead-letters: {groups, letters, parked_keys, next_after}.
  Json dead_letters(const ApiParams& params) const;
  // GET /api/audit: {entries, next_after}.
  Json audit(const ApiParams& params) const;

  // POST /api/dead-letters/replay and /discard: {count, events (first 100), dry_run}. Recorded
  // in the audit log unless a dry run. A paced replay (rate_per_second) returns early, with
  // what it did, once stop() is called.
  Json replay(const Json& body);
  Json discard(const Json& body);
  // POST /api/backfill: {consumer, count, dry_run}.
  Json backfill(const Json& body);
  // POST /api/consumers/pause {consumer, for (a duration) or until, note}: the consumer's row
  // as overview() has it. Recorded in the audit log.
  Json pause(const Json& body);
  // POST /api/consumers/resume {consumer}: the consumer's row and was_paused. Recorded in the
  // audit log.
  Json resume(const Json& body);
  // POST /api/prune: {count, dry_run, older_than, dedup_horizon, held_back}.
  Json prune(const Json& body);

  // Ends paced replays under way; call before shutting the server down.
  void stop();

 private:
  Json dead_letter_action(const Json& body, bool replay);
  // Waits `interval` unless stop() is called meanwhile (false).
  bool pace(std::chrono::milliseconds interval);

  const Session session_;
  const bool read_only_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
};

}  // namespace sluice::cli
