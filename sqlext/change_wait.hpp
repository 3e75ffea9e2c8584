// sluice_wait(): a connection that sleeps until another connection commits to its file, so that
// a consumer driven from SQL (Python, Node) waits for work instead of polling.
#pragma once

#include <SQLiteCpp/Database.h>

#include <memory>
#include <optional>

#include "data_version.hpp"
#include "file_watch.hpp"
#include "sluice/clock.hpp"

namespace sluice::sqlext {

// Not thread-safe: used where its connection is used.
class ChangeWait {
 public:
  // `db` must outlive the object.
  explicit ChangeWait(SQLite::Database& db);

  // Notes the file as this connection sees it now: a commit by another connection after this
  // ends the next wait() at once. sluice_claim calls it before it looks for work.
  void mark();

  // Waits until another connection has committed to the file since mark() or the end of the
  // previous wait (since the call, if neither came before), or until `timeout` passes. Returns
  // true for a commit, false at the timeout. Sleeps on the kernel's report of a write to the
  // file where there is one (FileWatch), polling PRAGMA data_version otherwise (an in-memory or
  // network file). A retry coming due writes nothing: it ends no wait before the timeout.
  bool wait(Duration timeout);

 private:
  const char* path() const;

  SQLite::Database& db_;
  DataVersion version_;
  std::optional<long long> seen_;
  std::unique_ptr<FileWatch> watch_;  // made on the first wait; null for an in-memory file
};

}  // namespace sluice::sqlext
