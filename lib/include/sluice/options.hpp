// Options shared by every sluice entry point. Plain values with documented defaults.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sluice/clock.hpp"
#include "sluice/log.hpp"
#include "sluice/retry_policy.hpp"

namespace sluice {

class Tracer;

// Whatever the level, an event is handed to something outside the file (an outside-transaction or
// batch handler, the relay, an SQL claimer) only once the commit that made it claimable is on
// disk: the WAL is synced after its claim commits, which covers the app's earlier commit of the
// event too (at most one sync per claim; none when an earlier sync already covered every event
// claimed and no other connection has committed since), so no effect leaves the box for a commit
// a power cut takes back.
enum class Synchronous {
  // Every commit is on disk when it returns: survives power loss. The default.
  kFull,
  // Survives an app crash; may lose the last commits (never half of one) on power loss, with
  // the in-transaction effects they carried. Faster commits for the app and in-transaction
  // consumers.
  kNormal,
};

// A plain value, copied by everything that takes it; like any struct, not thread-safe to change
// while another thread reads it.
struct Options {
  // The longest duration an option may hold: 100 years (36,500 days). Sums with it stay far
  // inside what a time can hold, in milliseconds and in nanoseconds alike.
  static constexpr Duration kLongestDuration = std::chrono::hours(24 * 36500);

  // PRAGMA synchronous for connections sluice opens.
  Synchronous synchronous = Synchronous::kFull;
  // How long a statement waits for another connection's write lock before SQLITE_BUSY.
  Duration busy_timeout = std::chrono::seconds(10);
  // Largest accepted payload, in bytes of JSON text.
  std::size_t max_payload_bytes = 1 << 20;
  // How often an idle worker checks the file for commits made by other processes
  // (PRAGMA data_version) where the kernel cannot wake it (on Linux it can: then it checks every
  // 50 poll intervals, the safety net for a missed wake). Commits in the same process wake it at
  // once.
  Duration poll_interval = std::chrono::milliseconds(100);
  // Most events one delivery transaction handles.
  int batch_size = 512;
  // A delivery transaction ends once it has held the write lock this long, so the app's own
  // writes never wait long.
  Duration batch_time_budget = std::chrono::milliseconds(50);
  // How long one batch may hold its claim before `check` reports it (a worker stuck in a
  // handler). A claim is taken over only when the worker that made it is gone, which the kernel
  // tells (a lock the worker holds while it lives: see README, "A process that dies
  // mid-delivery"). Where that lock cannot be had, the worker renews its claims' lease every
  // claim_lease / 3, and a claim whose owner cannot be looked up (another PID namespace, no
  // /proc) is taken over once the lease has run out. Keep it well above any step the wall clock
  // may take.
  Duration claim_lease = std::chrono::seconds(30);
  // Retry policy of consumers that do not set their own.
  RetryPolicy retry;
  // Time source; null means the clock recorded for the connection (see open_database), else
  // the system clock.
  std::shared_ptr<Clock> clock;
  // Log sink; null means silent.
  std::shared_ptr<LogSink> log;
  // Asked at each enqueue that gives no trace context (NewEvent::trace_context, or a
  // "traceparent" header) for the current one, e.g. from an OpenTelemetry SDK's active span:
  // a W3C traceparent, or nullopt for none. A malformed value is dropped with a warning in the
  // log, never refused. Called on the enqueuing thread; null: never asked.
  std::function<std::optional<std::string>()> current_trace_context;
  // Told of every handler call a Worker makes (sluice/tracer.hpp); null: none.
  std::shared_ptr<Tracer> tracer;

  // Throws InvalidArgument naming the field out of range: a negative duration or one past
  // kLongestDuration, a poll_interval of 0, a batch_size under 1 or a bad retry policy.
  // open_database and Worker call it before they do anything.
  void validate() const;
};

}  // namespace sluice
