// Fuzz target: a malformed or truncated sluice file opened by the tools: `check`, `stats`,
// `migrate` and a worker. The file is the input's bytes, or a good file with the input's bytes
// written over parts of it, cut short, or with values set by SQL where the schema does not expect
// them. `check` must report (never throw); the others must fail with a clear error: sluice::Error
// or the CLI's own (FileNotReady, UsageError). A crash, a hang or any other exception fails.
#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "file_not_ready.hpp"
#include "fuzz_input.hpp"
#include "health_checks.hpp"
#include "sample_file.hpp"
#include "scratch_directory.hpp"
#include "session.hpp"
#include "sluice/database.hpp"
#include "sluice/error.hpp"
#include "sluice/inspect.hpp"
#include "sluice/stats.hpp"
#include "sluice/worker.hpp"
#include "usage_error.hpp"

namespace {

struct Column {
  std::string table;
  std::string name;
};

struct Template {
  std::string bytes;
  // Every column of every sluice table, for the SQL edits.
  std::vector<Column> columns;
};

const Template& sample() {
  static const Template made = [] {
    Template t;
    const std::string path = sluice::fuzz::scratch_directory() + "/template.sluice";
    sluice::fuzz::write_sample_file(path);
    {
      SQLite::Database db(path);
      SQLite::Statement tables(db,
                               "SELECT m.name, c.name FROM sqlite_master m, "
                               "pragma_table_info(m.name) c WHERE m.type = 'table' AND "
                               "m.name LIKE 'sluice%' ORDER BY m.name, c.cid");
      while (tables.executeStep()) {
        t.columns.push_back({tables.getColumn(0).getString(), tables.getColumn(1).getString()});
      }
    }
    std::ifstream in(path, std::ios::binary);
    t.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return t;
  }();
  return made;
}

[[noreturn]] void fail(const char* tool, const std::string& what) {
  std::fprintf(stderr, "sluice file: %s: %s\n", tool, what.c_str());
  std::abort();
}

std::string path_of_file() { return sluice::fuzz::scratch_directory() + "/fuzzed.sluice"; }

void write_bytes(const std::string& bytes) {
  const std::string path = path_of_file();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The good file with runs of the input's bytes written over it, then maybe cut short.
std::string patched(sluice::fuzz::FuzzInput& in) {
  std::string bytes = sample().bytes;
  const int patches = 1 + in.byte() % 4;
  for (int i = 0; i < patches && !in.empty(); ++i) {
    const std::size_t at =
        ((std::size_t(in.byte()) << 16) | (std::size_t(in.byte()) << 8) | in.byte()) % bytes.size();
    const std::string run = in.text();
    bytes.replace(at, std::min(run.size(), bytes.size() - at), run);
  }
  if (in.byte() & 1) {
    bytes.resize(((std::size_t(in.byte()) << 16) | (std::size_t(in.byte()) << 8) | in.byte()) %
                 bytes.size());
  }
  return bytes;
}

// The good file with values of the input's choosing set in its columns, or rows deleted.
void edit_by_sql(sluice::fuzz::FuzzInput& in) {
  write_bytes(sample().bytes);
  SQLite::Database db(path_of_file(), SQLite::OPEN_READWRITE);
  const auto& columns = sample().columns;
  while (!in.empty()) {
    const Column& column = columns[in.byte() % columns.size()];
    const std::uint8_t kind = in.byte();
    try {
      if (kind % 8 == 7) {
        db.exec("DELETE FROM " + column.table);
        continue;
      }
      SQLite::Statement update(db, "UPDATE " + column.table + " SET " + column.name + " = ?");
      switch (kind % 8) {
        case 0:
          update.bind(1);
          break;
        case 1:
        case 2: {
          std::int64_t value = 0;
          for (int i = 0; i < 8; ++i) value = (value << 8) | in.byte();
          // Small values, negative ones included, as often as the extremes.
          update.bind(1, kind % 8 == 1 ? static_cast<std::int64_t>(static_cast<std::int8_t>(value))
                                       : value);
          break;
        }
        case 3:
          update.bind(1, static_cast<double>(static_cast<std::int8_t>(in.byte())) / 3);
          break;
        case 4: {
          const std::string blob = in.text();
          update.bind(1, blob.data(), static_cast<int>(blob.size()));
          break;
        }
        default:
          update.bind(1, in.text());
          break;
      }
      update.exec();
    } catch (const SQLite::Exception&) {
      // A constraint refused the value: the file stays as it was.
    }
  }
}

sluice::cli::Session session() {
  sluice::cli::Session s;
  s.db_path = path_of_file();
  s.busy_timeout = std::chrono::milliseconds(50);
  return s;
}

// Runs `tool`; only the errors the CLI reports clearly may escape it.
template <typename Tool>
void expect_clear_error(const char* name, Tool&& tool) {
  try {
    tool();
  } catch (const sluice::Error&) {
  } catch (const sluice::cli::FileNotReady&) {
  } catch (const sluice::cli::UsageError&) {
  } catch (const std::exception& e) {
    fail(name, std::string("unclear error: ") + e.what());
  }
}

void run_tools() {
  const sluice::cli::Session s = session();
  try {
    sluice::cli::checks_json(sluice::cli::run_checks(s));
  } catch (const std::exception& e) {
    fail("check", std::string("threw instead of reporting a problem: ") + e.what());
  }
  expect_clear_error("stats", [&] {
    SQLite::Database db = s.open_read_only();
    sluice::consumer_stats(db, s.options());
    for (const sluice::Event& event : sluice::list_events(db, {})) {
      sluice::delivery_statuses(db, event);
      sluice::attempt_history(db, event);
    }
  });
  expect_clear_error("migrate", [&] {
    if (s.sluice_version() < sluice::schema_version()) {
      sluice::open_database(s.db_path, s.options(), sluice::OpenMode::kExisting);
    }
  });
  expect_clear_error("worker", [&] {
    sluice::Worker worker(s.db_path, s.options());
    worker.subscribe("billing", "orders", [](const sluice::Event& event, sluice::Context& context) {
      if (event.key == "o2") context.dead_letter("card declined");
    });
    worker.run_until_idle();
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sluice::fuzz::FuzzInput in(data, size);
  switch (in.byte() % 3) {
    case 0:
      write_bytes(in.rest());
      break;
    case 1:
      write_bytes(patched(in));
      break;
    default:
      edit_by_sql(in);
      break;
  }
  run_tools();
  return 0;
}
