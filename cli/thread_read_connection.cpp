#include "thread_read_connection.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <list>
#include <memory>
#include <string>

#include "sluice/database.hpp"

namespace sluice::cli {
namespace {

// Enough for a console on one file and a test process's handful; each keeps a file open.
constexpr std::size_t kKeptPerThread = 4;

struct Kept {
  std::string path;
  Duration busy_timeout;
  dev_t device;
  ino_t inode;
  std::unique_ptr<SQLite::Database> db;
};

// {device, inode} of `path`, or {0, 0} when it cannot be read (open_read_only() says why).
std::pair<dev_t, ino_t> identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}

}  // namespace

SQLite::Database& thread_read_connection(const Session& session) {
  thread_local std::list<Kept> kept;  // most recently used first
  session.require_path();
  const auto [device, inode] = identity_of(session.db_path);
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    if (it->path != session.db_path || it->busy_timeout != session.busy_timeout) continue;
    if (device == 0 || it->device != device || it->inode != inode) {
      kept.erase(it);  // another file now, or none: open afresh below, which says why
      break;
    }
    kept.splice(kept.begin(), kept, it);
    session.check_read_only(*kept.front().db);
    return *kept.front().db;
  }
  auto db = std::make_unique<SQLite::Database>(session.open_read_only());
  kept.push_front({session.db_path, session.busy_timeout, device, inode, std::move(db)});
  if (kept.size() > kKeptPerThread) kept.pop_back();
  return *kept.front().db;
}

}  // namespace sluice::cli
