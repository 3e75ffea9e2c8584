// The workers registered in a file and whether each lives, for `sluice workers`, `sluice check`
// and the console. Read-only: liveness is asked of the kernel (the lock each worker holds on the
// byte of its id in "<database>-sluice-lock"), never written, and the lock file is never created.
#pragma once

#include <SQLiteCpp/Database.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sluice/options.hpp"

namespace sluice {

// A claim of a consumer's events that a worker holds right now.
struct HeldClaim {
  std::int64_t id = 0;
  std::string consumer;
  // The registered worker that holds it; none for a claim made before schema version 6.
  std::optional<std::int64_t> worker_id;
  long long pid = 0;
  // When the worker took its current batch under this claim: the claim's age is how long the
  // batch has been in hand.
  TimePoint since;
  TimePoint lease_until;
  // Whether its owner lives (false: the next worker to look recovers it).
  bool owner_alive = false;
};

// Whether a worker lives: known from its kernel lock; for a worker that cannot hold one (a
// read-only directory, a file system without OFD locks) from the leases of its claims; unknown
// for such a worker holding no claim.
enum class Liveness { kAlive, kDead, kUnknown };

// "alive", "dead" or "unknown".
const char* liveness_name(Liveness liveness);

struct WorkerStatus {
  std::int64_t id = 0;
  long long pid = 0;
  std::string host;
  // "worker" (the C++ or C API's Worker) or "sql" (a connection claiming with sluice_claim).
  std::string kind;
  // The consumers it delivers for, by name.
  std::vector<std::string> consumers;
  // When it registered: when a Worker started, or first claimed for run_until_idle() and SQL.
  TimePoint started_at;
  Liveness liveness = Liveness::kUnknown;
  std::vector<HeldClaim> claims;
};

// Every registered worker, by id, with the claims it holds. A worker that stopped is gone from
// the list; one that died stays, dead, until another worker forgets it. Never writes.
std::vector<WorkerStatus> list_workers(SQLite::Database& db, const Options& options = {});

// Every claim held right now, by id, its owner's liveness asked as list_workers() does. Never
// writes.
std::vector<HeldClaim> held_claims(SQLite::Database& db, const Options& options = {});

}  // namespace sluice
