// Fuzz target: the loadable extension's SQL functions and tables (docs/sql.md) called with
// arguments of any type and value, in any order, inside and outside transactions, as a host's
// SQL can, on a connection that loaded the module (SLUICE_SQLITE_MODULE, built as this host is:
// with the sanitizers, or in `make test` in the plain build). Bad arguments must come back as
// SQL errors; a crash, a leak or an exception escaping into SQLite fails.
#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_input.hpp"
#include "scratch_directory.hpp"

namespace {

struct Function {
  const char* name;
  int min_args;
  int max_args;
};

// As sql_functions.cpp registers them.
constexpr Function kFunctions[] = {
    {"sluice_enqueue", 2, 7},     {"sluice_enqueue_result", 2, 7}, {"sluice_init", 0, 0},
    {"sluice_subscribe", 2, 3},   {"sluice_claim", 1, 2},          {"sluice_done", 2, 2},
    {"sluice_fail", 3, 4},        {"sluice_release", 1, 1},        {"sluice_dlq_replay", 2, 2},
    {"sluice_dlq_discard", 3, 3},
};

const char* const kStatements[] = {
    "BEGIN",
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "SELECT * FROM sluice_stats",
    "SELECT * FROM sluice_dead_letters",
    "SELECT * FROM sluice_dead_letters WHERE consumer = 'billing'",
};

// Texts that get past the first checks: names, topics, JSON, option objects.
const char* const kWords[] = {"billing",
                              "orders",
                              "{}",
                              "{\"id\":1}",
                              "{\"start_from\": \"oldest\"}",
                              "{\"max_attempts\": 1}",
                              "card declined",
                              "e1",
                              "",
                              "oldest"};

sqlite3* connection() {
  static sqlite3* db = [] {
    sqlite3* opened = nullptr;
    const std::string path = sluice::fuzz::scratch_directory() + "/sql.sluice";
    if (sqlite3_open(path.c_str(), &opened) != SQLITE_OK) std::abort();
    char* error = nullptr;
    sqlite3_enable_load_extension(opened, 1);
    if (sqlite3_load_extension(opened, SLUICE_SQLITE_MODULE, nullptr, &error) != SQLITE_OK) {
      std::fprintf(stderr, "cannot load %s: %s\n", SLUICE_SQLITE_MODULE, error);
      std::abort();
    }
    sqlite3_exec(opened, "SELECT sluice_init()", nullptr, nullptr, nullptr);
    return opened;
  }();
  return db;
}

// The last text a call returned (an event ID, a claim's JSON), as a later call's argument.
std::string last_text;

void bind(sqlite3_stmt* statement, int index, sluice::fuzz::FuzzInput& in) {
  const std::uint8_t kind = in.byte();
  switch (kind % 7) {
    case 0:
      sqlite3_bind_null(statement, index);
      break;
    case 1: {
      std::int64_t value = 0;
      for (int i = 0; i < 8; ++i) value = (value << 8) | in.byte();
      sqlite3_bind_int64(statement, index, kind & 0x80 ? value : static_cast<std::int8_t>(value));
      break;
    }
    case 2:
      sqlite3_bind_double(statement, index, static_cast<std::int8_t>(in.byte()) * 0.75);
      break;
    case 3: {
      const std::string blob = in.text();
      sqlite3_bind_blob(statement, index, blob.data(), static_cast<int>(blob.size()),
                        SQLITE_TRANSIENT);
      break;
    }
    case 4: {
      const std::string text = in.text();
      sqlite3_bind_text(statement, index, text.data(), static_cast<int>(text.size()),
                        SQLITE_TRANSIENT);
      break;
    }
    case 5:
      sqlite3_bind_text(statement, index, last_text.data(), static_cast<int>(last_text.size()),
                        SQLITE_TRANSIENT);
      break;
    default:
      sqlite3_bind_text(statement, index, kWords[in.byte() % std::size(kWords)], -1, SQLITE_STATIC);
      break;
  }
}

void run(sqlite3_stmt* statement) {
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    if (sqlite3_column_type(statement, 0) == SQLITE_TEXT) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
      last_text.assign(text, static_cast<std::size_t>(sqlite3_column_bytes(statement, 0)));
    }
  }
  sqlite3_finalize(statement);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sqlite3* db = connection();
  sluice::fuzz::FuzzInput in(data, size);
  for (int calls = 0; calls < 16 && !in.empty(); ++calls) {
    const std::uint8_t pick = in.byte();
    sqlite3_stmt* statement = nullptr;
    if (pick >= 224) {
      sqlite3_prepare_v2(db, kStatements[pick % std::size(kStatements)], -1, &statement, nullptr);
      if (statement != nullptr) run(statement);
      continue;
    }
    const Function& f = kFunctions[pick % std::size(kFunctions)];
    const int args = f.min_args + in.byte() % (f.max_args - f.min_args + 1);
    std::string sql = std::string("SELECT ") + f.name + "(";
    for (int i = 0; i < args; ++i) sql += i == 0 ? "?" : ", ?";
    sql += ")";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) std::abort();
    for (int i = 1; i <= args; ++i) bind(statement, i, in);
    run(statement);
  }
  // Each input starts outside a transaction, as the last one may have left one open.
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  return 0;
}
