#include "sluice/workers.hpp"

#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>

#include "claim_book.hpp"
#include "connection_clock.hpp"
#include "liveness_lock.hpp"
#include "sqlite_error.hpp"
#include "time_format.hpp"

namespace sluice {
namespace {

std::string database_path(SQLite::Database& db) {
  const char* file = sqlite3_db_filename(db.getHandle(), "main");
  return file != nullptr ? file : "";
}

// The names in a worker row's JSON array of consumers, read by SQLite's own JSON functions.
std::vector<std::string> consumer_names(SQLite::Database& db, std::int64_t worker_id) {
  SQLite::Statement query(db,
                          "SELECT j.value FROM sluice_workers w, json_each(w.consumers) j "
                          "WHERE w.id = ? AND json_valid(w.consumers) ORDER BY j.key");
  query.bind(1, static_cast<int64_t>(worker_id));
  std::vector<std::string> names;
  while (query.executeStep()) names.push_back(query.getColumn(0).getString());
  return names;
}

}  // namespace

const char* liveness_name(Liveness liveness) {
  switch (liveness) {
    case Liveness::kAlive:
      return "alive";
    case Liveness::kDead:
      return "dead";
    case Liveness::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::vector<HeldClaim> held_claims(SQLite::Database& db, const Options& options) {
  return guarded("read claims", [&] {
    const TimePoint now = clock_for(db, options)->now();
    ClaimLiveness liveness(database_path(db));
    SQLite::Statement query(
        db,
        "SELECT k.id, c.name, k.worker_id, k.pid, k.created_at, k.lease_until, k.owner, w.locked "
        "FROM sluice_claims k JOIN sluice_consumers c ON c.id = k.consumer_id "
        "LEFT JOIN sluice_workers w ON w.id = k.worker_id ORDER BY k.id");
    std::vector<HeldClaim> claims;
    while (query.executeStep()) {
      HeldClaim claim;
      claim.id = query.getColumn(0).getInt64();
      claim.consumer = query.getColumn(1).getString();
      if (!query.getColumn(2).isNull()) claim.worker_id = query.getColumn(2).getInt64();
      claim.pid = query.getColumn(3).getInt64();
      claim.since = TimePoint(Duration(query.getColumn(4).getInt64()));
      claim.lease_until = TimePoint(Duration(query.getColumn(5).getInt64()));
      ClaimLiveness::Owner owner{.worker_id = claim.worker_id,
                                 .owner = query.getColumn(6).getString(),
                                 .lease_until = claim.lease_until};
      if (!query.getColumn(7).isNull()) owner.locked = query.getColumn(7).getInt() != 0;
      claim.owner_alive = !liveness.abandoned(owner, now);
      claims.push_back(std::move(claim));
    }
    return claims;
  });
}

std::vector<WorkerStatus> list_workers(SQLite::Database& db, const Options& options) {
  return guarded("read workers", [&] {
    std::multimap<std::int64_t, HeldClaim> claims_of;
    for (HeldClaim& claim : held_claims(db, options)) {
      if (claim.worker_id) claims_of.emplace(*claim.worker_id, std::move(claim));
    }
    const std::string path = database_path(db);
    std::optional<LivenessProbe> probe;
    if (!path.empty()) probe.emplace(path);
    SQLite::Statement query(db,
                            "SELECT id, pid, host, kind, locked, started_at FROM sluice_workers "
                            "ORDER BY id");
    std::vector<WorkerStatus> workers;
    while (query.executeStep()) {
      WorkerStatus worker;
      worker.id = query.getColumn(0).getInt64();
      worker.pid = query.getColumn(1).getInt64();
      worker.host = query.getColumn(2).getString();
      worker.kind = query.getColumn(3).getString();
      const bool locked = query.getColumn(4).getInt() != 0;
      worker.started_at = TimePoint(Duration(query.getColumn(5).getInt64()));
      worker.consumers = consumer_names(db, worker.id);
      const auto [first, last] = claims_of.equal_range(worker.id);
      for (auto it = first; it != last; ++it) worker.claims.push_back(it->second);
      std::optional<bool> held;
      if (locked && probe) held = probe->held(worker.id);
      if (held) {
        worker.liveness = *held ? Liveness::kAlive : Liveness::kDead;
      } else if (!worker.claims.empty()) {
        // Without its lock, a worker lives as long as its claims do (their leases, its process).
        const bool any_alive = std::any_of(worker.claims.begin(), worker.claims.end(),
                                           [](const HeldClaim& c) { return c.owner_alive; });
        worker.liveness = any_alive ? Liveness::kAlive : Liveness::kDead;
      }
      workers.push_back(std::move(worker));
    }
    return workers;
  });
}

}  // namespace sluice
