// An event handed to something outside the file (an outside-transaction or batch handler, the
// relay, an SQL claimer) must never carry the effect of a commit that a power cut takes back.
// Under synchronous = NORMAL (or OFF) a commit does not sync the WAL, so the claim's commit, and
// the app's commit of the event before it, may still be only in the disk cache when the handler
// sends the email. So after a claim commits and before any of its events is handed over, the WAL
// is synced: in WAL mode that makes every earlier commit durable too, so one sync covers the
// claim's events and their causes. In-transaction consumers do not need it: their effect is in
// the file, lost with its cause.
//
// A backlog need not pay a sync per claim: once a sync has covered every event up to some seq,
// a later claim of events no newer, with no other connection having committed since, hands over
// nothing whose cause is not already durable (its own commits since carry only outcomes, which a
// power cut may take back: the event is then handed over again, as after any crash).
#pragma once

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include <cstdint>
#include <optional>

#include "data_version.hpp"

namespace sluice {

// Not thread-safe: bound to one connection, used by its thread.
class DurableClaims {
 public:
  // Who else commits on the connection. On a connection of the engine's own, every other commit
  // shows in PRAGMA data_version; on an app's (an SQL claimer's), its own replays would not.
  enum class Connection { kEngineOwned, kShared };

  // `db` must outlive the object. Changes nothing.
  DurableClaims(SQLite::Database& db, Connection connection);
  DurableClaims(const DurableClaims&) = delete;
  DurableClaims& operator=(const DurableClaims&) = delete;

  // Called after a commit that claimed events up to `newest_seq` for a handler outside the file,
  // before any of them is handed over; outside a transaction. Returns once that commit and every
  // earlier one is durable: at once when the level is FULL (the commit synced), or when an
  // earlier sync is known to cover them; else after a sync of the WAL. Throws DatabaseError if
  // the sync fails (nothing may then be handed over).
  void claimed(std::int64_t newest_seq);

  // Called when something on this connection other than the engine's own bookkeeping may have
  // committed (an in-transaction handler's writes): the next claim syncs.
  void forget() { synced_.reset(); }

 private:
  struct Synced {
    long long data_version;
    std::int64_t newest_seq;
  };

  SQLite::Database& db_;
  const bool on_file_;
  const bool shared_;
  DataVersion data_version_;
  SQLite::Statement newest_event_;
  std::optional<Synced> synced_;  // what the last sync covered, when it still holds
};

}  // namespace sluice
