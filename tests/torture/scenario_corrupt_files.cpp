// Scenario 9: damaged and hostile files (flipped bytes, truncation, a non-SQLite file, a newer
// schema) handed to open, stats, delivery and the CLI: each gives a sluice::Error or succeeds,
// never a crash or sanitizer report, and the file is never deleted or recreated.
#include <SQLiteCpp/Statement.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sluice/sluice.hpp>
#include <sstream>
#include <vector>

#include "child_process.hpp"
#include "in_process_pipeline.hpp"
#include "scenario.hpp"
#include "temp_dir.hpp"

namespace sluice::torture {

namespace {

// How the library child ended: the file opened and every step ran (each worked or raised a
// sluice::Error), or open refused it with one of these errors, or something else escaped.
constexpr int kExitOpened = 0;
constexpr int kExitNotADatabase = 10;
constexpr int kExitCorrupt = 11;
constexpr int kExitSchemaVersion = 12;
constexpr int kExitOtherSluiceError = 13;
constexpr int kExitNonSluiceException = 20;
constexpr int kExitUnknownException = 21;
constexpr int kSanitizerExitCode = 99;

const char* describe_library_exit(int code) {
  switch (code) {
    case kExitOpened:
      return "opened";
    case kExitNotADatabase:
      return "NotADatabaseError";
    case kExitCorrupt:
      return "CorruptDatabaseError";
    case kExitSchemaVersion:
      return "SchemaVersionError";
    case kExitOtherSluiceError:
      return "other sluice::Error";
    default:
      return nullptr;
  }
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A populated sluice file: delivered events, dead letters, pending events. Returns the ID of a
// dead-lettered event, for `sluice show`.
std::string build_template(const std::string& path) {
  InProcessPipeline pipeline(path);
  pipeline.enqueue(40);
  const std::string dead_id = pipeline.enqueue(3, true).front();
  pipeline.drain();
  pipeline.enqueue(10);
  SQLite::Database db(path, SQLite::OPEN_READWRITE);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return dead_id;
}

// Makes the file claim a schema version newer than this library's.
void make_newer_schema(const std::string& path) {
  SQLite::Database db(path, SQLite::OPEN_READWRITE);
  const int newer = schema_version() + 1;
  db.exec("UPDATE sluice_meta SET value = " + std::to_string(newer) +
          " WHERE name = 'schema_version'");
}

std::string damage(const std::string& template_bytes, const std::string& path, int kind,
                   std::mt19937_64& rng) {
  std::string bytes = template_bytes;
  switch (kind) {
    case 0: {
      const int flips = 1 + static_cast<int>(rng() % 16);
      for (int i = 0; i < flips; ++i)
        bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
      write_all(path, bytes);
      return "flipped bytes";
    }
    case 1:
      bytes.resize(rng() % bytes.size());
      write_all(path, bytes);
      return "truncated";
    case 2: {
      std::string junk(1 + rng() % 20000, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      write_all(path, rng() % 2 ? junk : "this is not a database\n" + junk);
      return "not SQLite";
    }
    case 3: {
      const std::size_t page = 4096;
      const std::size_t at = (1 + rng() % std::max<std::size_t>(1, bytes.size() / page - 1)) * page;
      for (std::size_t i = at; i < std::min(bytes.size(), at + page); ++i)
        bytes[i] = static_cast<char>(rng());
      write_all(path, bytes);
      return "garbled page";
    }
    default:
      write_all(path, bytes);
      make_newer_schema(path);
      return "newer schema";
  }
}

// In a forked child: open, stats, metrics, listings, inspection, delivery and enqueue on the
// file. Exits with kExitOpened when every step either worked or raised a sluice::Error, or with
// the code of the sluice::Error open raised.
[[noreturn]] void exercise(const std::string& path) {
  int rc = kExitOpened;
  try {
    Options options;
    options.busy_timeout = std::chrono::milliseconds(200);
    try {
      SQLite::Database db = open_database(path, options, OpenMode::kExisting);
      auto step = [&](auto&& f) {
        try {
          f();
        } catch (const Error&) {
        }
      };
      step([&] { stored_schema_version(db); });
      step([&] { consumer_stats(db, options); });
      step([&] { metrics_text(db, options); });
      step([&] { list_dead_letters(db, {.include_discarded = true}); });
      step([&] {
        EventFilter filter;
        filter.consumer = "c0";
        for (const Event& e : list_events(db, filter)) {
          delivery_statuses(db, find_event(db, e.id));
          attempt_history(db, e);
        }
      });
      step([&] { InProcessPipeline::deliver_once(db, options); });
      step([&] {
        Outbox outbox(db, options);
        NewEvent e;
        e.topic = kInProcessTopic;
        outbox.enqueue_now(e);
      });
    } catch (const NotADatabaseError&) {
      rc = kExitNotADatabase;
    } catch (const CorruptDatabaseError&) {
      rc = kExitCorrupt;
    } catch (const SchemaVersionError&) {
      rc = kExitSchemaVersion;
    } catch (const Error&) {
      rc = kExitOtherSluiceError;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "corrupt file: non-sluice exception: %s\n", e.what());
    rc = kExitNonSluiceException;
  } catch (...) {
    rc = kExitUnknownException;
  }
  ::_exit(rc);
}

struct CliTally {
  long long runs = 0;
  std::map<int, long long> exits;
};

// Runs `sluice --db PATH command...` on the damaged file: it must end with a documented exit code
// (0 ok, 1 not found or warnings, 2 usage, 3 database error, 4 check found problems, 5 not a
// sluice file or an older schema), say what went
// wrong in one line on stderr (`check` reports on stdout), and never crash, trip a sanitizer or
// report an exception sluice did not classify.
void check_cli_run(const SuiteConfig& config, const std::vector<std::string>& command,
                   const std::string& path, const std::string& stderr_path, const std::string& kind,
                   CliTally& tally, ScenarioResult& result) {
  std::vector<std::string> args{"--db", path};
  args.insert(args.end(), command.begin(), command.end());
  std::string name = "sluice";
  for (const std::string& word : command) name += " " + word;
  ChildProcess cli(
      config.cli_exe, args,
      {{"ASAN_OPTIONS", "exitcode=" + std::to_string(kSanitizerExitCode)},
       {"UBSAN_OPTIONS", "halt_on_error=1:exitcode=" + std::to_string(kSanitizerExitCode)}},
      stderr_path);
  const int status = cli.wait();
  ++tally.runs;
  const std::string err = read_all(stderr_path);
  const auto lines = std::count(err.begin(), err.end(), '\n');
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 5) {
    result.fail(kind + " file: `" + name + "` ended with " + describe_status(status) + ": " +
                err.substr(0, 300));
    return;
  }
  ++tally.exits[WEXITSTATUS(status)];
  if (lines > 1 || (!err.empty() && (err.rfind("sluice: ", 0) != 0 || err.back() != '\n'))) {
    result.fail(kind + " file: `" + name +
                "` wrote more than one line to stderr: " + err.substr(0, 300));
  } else if (err.empty() && WEXITSTATUS(status) != 0 && command.front() != "check") {
    result.fail(kind + " file: `" + name + "` ended with " + describe_status(status) +
                " and no message");
  } else if (err.find("unexpected error") != std::string::npos) {
    result.fail(kind + " file: `" + name + "` met an exception sluice did not classify: " + err);
  }
}

}  // namespace

ScenarioResult run_corrupt_files(const SuiteConfig& config) {
  ScenarioResult result("9 corrupt/hostile files");
  TempDir dir;
  const std::string template_path = dir.file("template.db");
  const std::string dead_id = build_template(template_path);
  const std::string template_bytes = read_all(template_path);
  const std::vector<std::vector<std::string>> commands = {
      {"stats"}, {"check"}, {"dlq", "list"}, {"events"}, {"show", dead_id}};
  CliTally cli;
  std::mt19937_64 rng(config.seed * 139);
  const std::string path = dir.file("victim.db");
  std::map<std::string, long long> outcomes;
  for (long long i = 0; i < config.count(40, 1000); ++i) {
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    const std::string kind = damage(template_bytes, path, static_cast<int>(i % 5), rng);
    struct stat before {};
    ::stat(path.c_str(), &before);
    const pid_t pid = ::fork();
    if (pid == 0) exercise(path);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ++result.runs;
    const char* outcome = WIFEXITED(status) ? describe_library_exit(WEXITSTATUS(status)) : nullptr;
    if (outcome == nullptr) {
      result.fail(kind + " file: library child ended with " + describe_status(status));
    } else {
      ++outcomes[outcome];
      const int expected = kind == "not SQLite"     ? kExitNotADatabase
                           : kind == "newer schema" ? kExitSchemaVersion
                                                    : -1;
      if (expected >= 0 && WEXITSTATUS(status) != expected) {
        result.fail(kind + " file: open gave " + outcome + ", expected " +
                    describe_library_exit(expected));
      }
    }
    if (!config.cli_exe.empty()) {
      // Every case meets the CLI: all commands in --long; in the short run one command in turn,
      // shifted every five cases so that each command meets each kind of damage.
      const auto turn = static_cast<std::size_t>(i + i / 5);
      const std::size_t first = config.long_run ? 0 : turn % commands.size();
      const std::size_t last = config.long_run ? commands.size() : first + 1;
      for (std::size_t c = first; c < last; ++c) {
        check_cli_run(config, commands[c], path, dir.file("cli.stderr"), kind, cli, result);
      }
    }
    struct stat after {};
    if (::stat(path.c_str(), &after) != 0 || after.st_ino != before.st_ino) {
      result.fail(kind + " file was deleted or recreated");
    } else if (after.st_size == 0 && before.st_size != 0) {
      result.fail(kind + " file was emptied");
    }
  }
  result.notes = "library cases=" + std::to_string(result.runs) + " (";
  for (const auto& [outcome, count] : outcomes) {
    result.notes +=
        (result.notes.back() == '(' ? "" : ", ") + outcome + " " + std::to_string(count);
  }
  result.notes += "), CLI runs=" + std::to_string(cli.runs) + " (exit";
  for (const auto& [code, count] : cli.exits) {
    result.notes += " " + std::to_string(code) + ":" + std::to_string(count);
  }
  result.notes += ")";
  return result;
}

}  // namespace sluice::torture
