#include "borrowed_connection.hpp"

#include <memory>
#include <string>
#include <utility>

#include "../connection_cache.hpp"

namespace sluice::c_api {
namespace {

// SQLiteCpp 3.2.1's Database cannot adopt a connection: it opens its own and keeps the handle in
// a private member. An explicit instantiation may name a private member (access is not checked
// there), so this hands out pointers to the two members, and only this file uses them.
using HandleMember = std::unique_ptr<sqlite3, SQLite::Database::Deleter> SQLite::Database::*;
using FilenameMember = std::string SQLite::Database::*;

HandleMember handle_member();
FilenameMember filename_member();

template <HandleMember Handle, FilenameMember Filename>
struct MemberAccess {
  friend HandleMember handle_member() { return Handle; }
  friend FilenameMember filename_member() { return Filename; }
};
template struct MemberAccess<&SQLite::Database::mSQLitePtr, &SQLite::Database::mFilename>;

// The Database object for one app connection; gives the handle back, unclosed, when the
// connection closes (it is destroyed then, from the connection cache).
class Borrowed final : public ConnectionCached {
 public:
  explicit Borrowed(sqlite3* handle) : db_(":memory:", SQLITE_OPEN_READWRITE) {
    // The in-memory connection the constructor had to open is closed here, the app's adopted.
    (db_.*handle_member()).reset(handle);
    const char* file = sqlite3_db_filename(handle, "main");
    db_.*filename_member() = file != nullptr && *file != '\0' ? file : ":memory:";
  }
  ~Borrowed() override { (void)(db_.*handle_member()).release(); }
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;

  SQLite::Database& db() { return db_; }

 private:
  SQLite::Database db_;
};

const char kBorrowedKey = 0;

}  // namespace

SQLite::Database& borrowed_database(sqlite3* handle) {
  auto& borrowed = static_cast<Borrowed&>(
      connection_cached(handle, &kBorrowedKey, [&] { return std::make_unique<Borrowed>(handle); }));
  return borrowed.db();
}

}  // namespace sluice::c_api
