#include "sql_functions.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "consumer_registry.hpp"
#include "enqueue_in_statement.hpp"
#include "result_tables.hpp"
#include "saturating_time.hpp"
#include "sluice/database.hpp"
#include "sluice/dead_letters.hpp"
#include "sluice/error.hpp"
#include "sluice/pause.hpp"
#include "sql_connection.hpp"
#include "testing_kit.hpp"
#include "time_format.hpp"
#include "write_transaction.hpp"

namespace sluice::sqlext {
namespace {

using Args = sqlite3_value**;

// Arguments as the engine takes them: NULL is empty text.
std::string text(sqlite3_value* value) {
  if (value == nullptr || sqlite3_value_type(value) == SQLITE_NULL) return {};
  const auto* bytes = reinterpret_cast<const char*>(sqlite3_value_text(value));
  return std::string(bytes, static_cast<std::size_t>(sqlite3_value_bytes(value)));
}

sqlite3_value* arg(int argc, Args argv, int i) { return i < argc ? argv[i] : nullptr; }

bool is_null(sqlite3_value* value) {
  return value == nullptr || sqlite3_value_type(value) == SQLITE_NULL;
}

void result_text(sqlite3_context* ctx, const std::string& value) {
  sqlite3_result_text(ctx, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

// How deep sluice functions may run inside one another on a thread: a trigger on sluice_events
// that enqueues for some events (WHEN NEW.topic = ...) nests a level or two. SQLite's trigger
// depth limit does not see the statements a function runs, so a trigger that enqueues for the
// events it enqueues itself recursed until the host's stack overflowed (SIGSEGV).
constexpr int kMaxNesting = 8;

// Calls of sluice functions running on this thread, each inside the one before.
thread_local int nesting = 0;
// Set by the call refused for nesting too deep, and reported by every call it was nested in
// (each of which sees it as its statement's error) instead of that error quoting it again.
thread_local std::string nesting_refusal;

// Runs a function's body on the caller's connection; a sluice error becomes the SQL error.
void run(sqlite3_context* ctx, const std::function<void(SqlConnection&)>& body) {
  const char* name = static_cast<const char*>(sqlite3_user_data(ctx));
  if (nesting == kMaxNesting) {
    nesting_refusal = std::string("sluice: ") + name + ": refused, nested " +
                      std::to_string(kMaxNesting + 1) +
                      " deep in sluice function calls: a trigger on sluice_events that enqueues "
                      "runs again for the event it enqueues (add a WHEN that excludes it)";
    sqlite3_result_error(ctx, nesting_refusal.c_str(), -1);
    return;
  }
  ++nesting;
  try {
    body(SqlConnection::of(sqlite3_context_db_handle(ctx)));
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, nesting_refusal.empty() ? e.what() : nesting_refusal.c_str(), -1);
  }
  if (--nesting == 0) nesting_refusal.clear();
}

// The operator verbs commit in transactions of their own, as the engine's calls do.
void require_autocommit(SqlConnection& c, const char* function) {
  if (in_transaction(c.db())) {
    throw TransactionError(std::string("sluice: ") + function +
                           " runs in transactions of its own: call it outside BEGIN ... COMMIT");
  }
}

// A time as integer milliseconds since the epoch, or as text SQLite's date functions read
// (ISO-8601: '2026-12-02T10:30:00Z', '2026-12-02 10:30:00.250+01:00'), read by SQLite itself so
// that it means what julianday() and datetime() make of it on the same connection. `what` names
// the argument in the error, e.g. "enqueue: not_before".
TimePoint time_argument(SQLite::Database& db, sqlite3_value* value, const char* what) {
  if (sqlite3_value_type(value) == SQLITE_INTEGER)
    return TimePoint(Duration(sqlite3_value_int64(value)));
  const std::string given = text(value);
  if (sqlite3_value_type(value) == SQLITE_TEXT) {
    // julianday() keeps whole milliseconds (SQLite holds them as an integer), and a double holds
    // this product exactly for any year SQLite reads (0000-9999).
    SQLite::Statement read(db, "SELECT round((julianday(?) - 2440587.5) * 86400000.0)");
    read.bind(1, given);
    if (read.executeStep() && !read.getColumn(0).isNull()) {
      return TimePoint(Duration(static_cast<std::int64_t>(read.getColumn(0).getDouble())));
    }
  }
  // A message is C text: a NUL would end it before it says what was wrong.
  std::string shown = sqlite3_value_type(value) == SQLITE_BLOB ? "a blob" : "'" + given + "'";
  std::replace(shown.begin(), shown.end(), '\0', '?');
  throw InvalidArgument(std::string("sluice: ") + what + " " + shown +
                        " is neither an integer (milliseconds since the Unix epoch) nor an "
                        "ISO-8601 time such as '2026-12-02T10:30:00Z'");
}

NewEvent new_event(SQLite::Database& db, int argc, Args argv) {
  NewEvent event;
  event.topic = text(arg(argc, argv, 0));
  if (is_null(arg(argc, argv, 1))) {
    throw InvalidArgument("sluice: enqueue: the payload is NULL; give JSON text, e.g. '{}'");
  }
  event.payload = text(arg(argc, argv, 1));
  event.key = text(arg(argc, argv, 2));
  event.id = text(arg(argc, argv, 3));
  event.dedup_key = text(arg(argc, argv, 4));
  if (sqlite3_value* not_before = arg(argc, argv, 5); !is_null(not_before)) {
    event.not_before = time_argument(db, not_before, "enqueue: not_before");
  }
  if (sqlite3_value* headers = arg(argc, argv, 6); !is_null(headers)) {
    const nlohmann::json object = nlohmann::json::parse(text(headers), nullptr, false);
    if (!object.is_object()) {
      throw InvalidArgument("sluice: enqueue: headers must be a JSON object of strings");
    }
    for (const auto& [name, value] : object.items()) {
      if (!value.is_string()) {
        throw InvalidArgument("sluice: enqueue: header '" + name + "' is not a string");
      }
      event.headers[name] = value.get<std::string>();
    }
  }
  // NULL means version 1, as an omitted argument does.
  if (sqlite3_value* version = arg(argc, argv, 7); !is_null(version)) {
    if (sqlite3_value_type(version) != SQLITE_INTEGER) {
      throw InvalidArgument("sluice: enqueue: version must be an integer, 1 or more");
    }
    const sqlite3_int64 given = sqlite3_value_int64(version);
    // Out of int's range reads as 0: refused below as any version under 1 is.
    event.version = given > 0 && given <= INT_MAX ? static_cast<int>(given) : 0;
  }
  return event;
}

EnqueueResult enqueue(SqlConnection& c, int argc, Args argv) {
  c.require_schema();
  const NewEvent event = new_event(c.db(), argc, argv);
  return enqueue_in_statement(c.db(), event, c.options());
}

void sluice_enqueue(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) { result_text(ctx, enqueue(c, argc, argv).id); });
}

void sluice_enqueue_result(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    const EnqueueResult result = enqueue(c, argc, argv);
    const char* status = result.status == EnqueueResult::Status::kStored ? "stored"
                         : result.status == EnqueueResult::Status::kDuplicateId
                             ? "duplicate_id"
                             : "duplicate_dedup_key";
    result_text(ctx,
                nlohmann::json{{"id", result.id}, {"seq", result.seq}, {"status", status}}.dump());
  });
}

void sluice_init(sqlite3_context* ctx, int, Args) {
  run(ctx, [&](SqlConnection& c) {
    require_autocommit(c, "sluice_init");
    ensure_schema(c.db());
    configure_connection(c.db(), c.options());
    sqlite3_result_int64(ctx, schema_version());
  });
}

// One member of sluice_subscribe's options object into `options` or `start_from`. Throws
// InvalidArgument naming the member and what it takes when the name or value is not one of them.
void read_subscribe_option(const std::string& name, const nlohmann::json& value,
                           RecordedOptions& options, StartFrom& start_from) {
  const auto refuse = [&](const char* takes) {
    throw InvalidArgument("sluice: sluice_subscribe: option " + name + " " + value.dump() + ": " +
                          takes);
  };
  // A whole number from 0 (or `least`) to `most`, as nlohmann reads either sign.
  const auto whole = [&](std::int64_t least, const char* takes) {
    if (!value.is_number_integer() ||
        (value.is_number_unsigned() && value.get<std::uint64_t>() > INT64_MAX) ||
        value.get<std::int64_t>() < least) {
      refuse(takes);
    }
    return value.get<std::int64_t>();
  };
  if (name == "start_from") {
    if (value == "oldest") {
      start_from = StartFrom::kOldest;
    } else if (value == "now") {
      start_from = StartFrom::kNow;
    } else {
      refuse("\"now\" or \"oldest\"");
    }
  } else if (name == "max_attempts") {
    const std::int64_t n = whole(1, "a whole number of attempts, 1 or more");
    if (n > INT_MAX) refuse("a whole number of attempts, 1 or more (at most 2147483647)");
    options.max_attempts = static_cast<int>(n);
  } else if (name == "initial_backoff_ms") {
    options.initial_backoff = Duration(whole(0, "a whole number of milliseconds, 0 or more"));
  } else if (name == "max_backoff_ms") {
    options.max_backoff = Duration(whole(0, "a whole number of milliseconds, 0 or more"));
  } else if (name == "multiplier") {
    if (!value.is_number() || !(value.get<double>() >= 1.0) ||
        !std::isfinite(value.get<double>())) {
      refuse("the growth of the delay per attempt, a finite number, 1 or more");
    }
    options.multiplier = value.get<double>();
  } else if (name == "jitter") {
    if (!value.is_number() || !(value.get<double>() >= 0.0 && value.get<double>() < 1.0)) {
      refuse("the fraction of the delay randomised, from 0 up to (not including) 1");
    }
    options.jitter = value.get<double>();
  } else if (name == "seed") {
    if (!value.is_number_integer() ||
        (!value.is_number_unsigned() && value.get<std::int64_t>() < 0)) {
      refuse("a whole number from 0 to 18446744073709551615");
    }
    options.seed = value.get<std::uint64_t>();
  } else {
    throw InvalidArgument("sluice: sluice_subscribe: unknown option '" + name +
                          "' (start_from, max_attempts, initial_backoff_ms, max_backoff_ms, "
                          "multiplier, jitter, seed)");
  }
}

void sluice_subscribe(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    require_autocommit(c, "sluice_subscribe");
    const std::string consumer = text(argv[0]);
    const std::string topic = text(argv[1]);
    if (consumer.empty() || topic.empty()) {
      throw InvalidArgument("sluice: sluice_subscribe: the consumer and the topic must be named");
    }
    // Only what the call names is asked of an existing consumer: a consumer of a C++ worker,
    // subscribed again from SQL, keeps its recorded options.
    RecordedOptions options;
    StartFrom start_from = StartFrom::kNow;
    if (sqlite3_value* given = arg(argc, argv, 2); !is_null(given)) {
      const nlohmann::json settings = nlohmann::json::parse(text(given), nullptr, false);
      if (!settings.is_object()) {
        throw InvalidArgument(
            "sluice: sluice_subscribe: options must be a JSON object such as "
            "{\"start_from\": \"oldest\", \"max_attempts\": 5, \"initial_backoff_ms\": 1000}");
      }
      for (const auto& [name, value] : settings.items()) {
        read_subscribe_option(name, value, options, start_from);
      }
    }
    sqlite3_result_int64(
        ctx, record_subscription(c.db(), consumer, topic, options, start_from, c.clock().now()));
  });
}

void sluice_claim(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    const int limit = is_null(arg(argc, argv, 1)) ? 100 : sqlite3_value_int(argv[1]);
    // A commit after the claim looked ends the next sluice_wait() at once.
    c.change_wait().mark();
    result_text(ctx, c.consumer(text(argv[0])).claim(limit));
  });
}

void sluice_wait(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    require_autocommit(c, "sluice_wait");
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER || sqlite3_value_int64(argv[0]) < 0) {
      throw InvalidArgument(
          "sluice: sluice_wait: the timeout must be a whole number of milliseconds, 0 or more");
    }
    const auto timeout = Duration(
        std::min<std::int64_t>(sqlite3_value_int64(argv[0]), Options::kLongestDuration.count()));
    sqlite3_result_int64(ctx, c.change_wait().wait(timeout) ? 1 : 0);
  });
}

void sluice_done(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.consumer(text(argv[0])).done(text(argv[1]));
    sqlite3_result_int64(ctx, 1);
  });
}

void sluice_fail(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    const bool permanent = !is_null(arg(argc, argv, 3)) && sqlite3_value_int(argv[3]) != 0;
    result_text(ctx, c.consumer(text(argv[0])).fail(text(argv[1]), text(argv[2]), permanent));
  });
}

void sluice_release(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    require_autocommit(c, "sluice_release");
    sqlite3_result_int64(ctx, c.consumer(text(argv[0])).release());
  });
}

// The testing kit (testing_kit.hpp): the connection's clock set, moved and read, and what a
// test asks of its consumers.
void sluice_clock_set(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    if (is_null(argv[0])) {
      c.clock().set(std::nullopt);
    } else {
      const TimePoint time = time_argument(c.db(), argv[0], "sluice_clock_set: the time");
      if (time < TimePoint{}) {
        throw InvalidArgument("sluice: sluice_clock_set: the time " +
                              std::to_string(to_millis(time)) + " is before the Unix epoch");
      }
      c.clock().set(time);
    }
    sqlite3_result_int64(ctx, to_millis(c.clock().now()));
  });
}

void sluice_clock_advance(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    if (!c.clock().manual()) {
      throw InvalidArgument(
          "sluice: sluice_clock_advance: the connection reads the system clock; stop it first "
          "with sluice_clock_set(time)");
    }
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER || sqlite3_value_int64(argv[0]) < 0) {
      throw InvalidArgument(
          "sluice: sluice_clock_advance: the step must be a whole number of milliseconds, 0 or "
          "more");
    }
    c.clock().set(add_saturating(c.clock().now(), Duration(sqlite3_value_int64(argv[0]))));
    sqlite3_result_int64(ctx, to_millis(c.clock().now()));
  });
}

void sluice_now(sqlite3_context* ctx, int, Args) {
  run(ctx, [&](SqlConnection& c) { sqlite3_result_int64(ctx, to_millis(c.clock().now())); });
}

void sluice_next_due(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    if (const auto due = next_due(c, text(arg(argc, argv, 0)))) {
      sqlite3_result_int64(ctx, to_millis(*due));
    } else {
      sqlite3_result_null(ctx);
    }
  });
}

void sluice_delivery_state(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    result_text(ctx, delivery_state(c, text(argv[0]), text(argv[1])));
  });
}

// Dead letters of consumer argv[0] (NULL: all), event ID argv[1] (NULL: all).
DeadLetterFilter dead_letter_filter(Args argv) {
  DeadLetterFilter filter;
  filter.consumer = text(argv[0]);
  if (!is_null(argv[1])) filter.event_ids.push_back(text(argv[1]));
  return filter;
}

void sluice_dlq_replay(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    require_autocommit(c, "sluice_dlq_replay");
    AuditEntry audit{.source = "sql"};
    sqlite3_result_int64(ctx, replay_dead_letters(c.db(), dead_letter_filter(argv), {}, {}, audit));
  });
}

void sluice_dlq_discard(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    require_autocommit(c, "sluice_dlq_discard");
    const std::string note = text(argv[2]);
    if (note.empty()) {
      throw InvalidArgument(
          "sluice: sluice_dlq_discard: give a note saying why (the audit record)");
    }
    AuditEntry audit{.source = "sql"};
    sqlite3_result_int64(
        ctx, discard_dead_letters(c.db(), dead_letter_filter(argv), note, {}, {}, audit));
  });
}

// sluice_pause(consumer [, until_ms [, note]]): until_ms NULL or absent lasts until resumed.
void sluice_pause(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    require_autocommit(c, "sluice_pause");
    PauseOptions pause;
    if (sqlite3_value* until = arg(argc, argv, 1); !is_null(until)) {
      if (sqlite3_value_type(until) != SQLITE_INTEGER) {
        throw InvalidArgument(
            "sluice: sluice_pause: until must be milliseconds since the epoch, or NULL (until "
            "resumed)");
      }
      pause.until = TimePoint(Duration(sqlite3_value_int64(until)));
    }
    if (sqlite3_value* note = arg(argc, argv, 2); !is_null(note)) pause.note = text(note);
    AuditEntry audit{.source = "sql"};
    pause_consumer(c.db(), text(argv[0]), pause, {}, audit);
    sqlite3_result_int64(ctx, 1);
  });
}

void sluice_resume(sqlite3_context* ctx, int, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    c.require_schema();
    require_autocommit(c, "sluice_resume");
    AuditEntry audit{.source = "sql"};
    sqlite3_result_int64(ctx, resume_consumer(c.db(), text(argv[0]), {}, audit) ? 1 : 0);
  });
}

// sluice_throttle(consumer, event_id, delay_ms [, reason]).
void sluice_throttle(sqlite3_context* ctx, int argc, Args argv) {
  run(ctx, [&](SqlConnection& c) {
    if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER || sqlite3_value_int64(argv[2]) < 0) {
      throw InvalidArgument(
          "sluice: sluice_throttle: the delay must be a whole number of milliseconds, 0 or more");
    }
    const auto delay = Duration(
        std::min<std::int64_t>(sqlite3_value_int64(argv[2]), Options::kLongestDuration.count()));
    sqlite3_value* reason = arg(argc, argv, 3);
    result_text(
        ctx, c.consumer(text(argv[0]))
                 .throttle(text(argv[1]), delay, is_null(reason) ? std::string() : text(argv[3])));
  });
}

struct Function {
  const char* name;
  int min_args;
  int max_args;
  void (*body)(sqlite3_context*, int, Args);
  // Callable from triggers and views (enqueue only): the operator verbs must not run when a
  // schema written by someone else says so.
  bool in_schema;
};

const Function kFunctions[] = {
    {"sluice_enqueue", 2, 8, sluice_enqueue, true},
    {"sluice_enqueue_result", 2, 8, sluice_enqueue_result, true},
    {"sluice_init", 0, 0, sluice_init, false},
    {"sluice_subscribe", 2, 3, sluice_subscribe, false},
    {"sluice_claim", 1, 2, sluice_claim, false},
    {"sluice_done", 2, 2, sluice_done, false},
    {"sluice_fail", 3, 4, sluice_fail, false},
    {"sluice_release", 1, 1, sluice_release, false},
    {"sluice_wait", 1, 1, sluice_wait, false},
    {"sluice_clock_set", 1, 1, sluice_clock_set, false},
    {"sluice_clock_advance", 1, 1, sluice_clock_advance, false},
    {"sluice_now", 0, 0, sluice_now, false},
    {"sluice_next_due", 0, 1, sluice_next_due, false},
    {"sluice_delivery_state", 2, 2, sluice_delivery_state, false},
    {"sluice_dlq_replay", 2, 2, sluice_dlq_replay, false},
    {"sluice_dlq_discard", 3, 3, sluice_dlq_discard, false},
    {"sluice_pause", 1, 3, sluice_pause, false},
    {"sluice_resume", 1, 1, sluice_resume, false},
    {"sluice_throttle", 3, 4, sluice_throttle, false},
};

}  // namespace

int register_functions(sqlite3* db, std::string& error) {
  try {
    SqlConnection::attach(db);
    for (const Function& f : kFunctions) {
      for (int args = f.min_args; args <= f.max_args; ++args) {
        const int flags = SQLITE_UTF8 | (f.in_schema ? 0 : SQLITE_DIRECTONLY);
        // The name is the function's user data, for its error messages.
        const int rc = sqlite3_create_function_v2(
            db, f.name, args, flags, const_cast<char*>(f.name), f.body, nullptr, nullptr, nullptr);
        if (rc != SQLITE_OK) {
          error = std::string("sluice: cannot register ") + f.name + ": " + sqlite3_errmsg(db);
          return rc;
        }
      }
    }
    register_tables(db);
    // Busy handling as sluice's own connections have it, on a file that is sluice's already: a
    // file without the schema is left as it is until sluice_init().
    SqlConnection& c = SqlConnection::of(db);
    if (stored_schema_version(c.db()) == schema_version())
      configure_connection(c.db(), c.options());
    return SQLITE_OK;
  } catch (const std::exception& e) {
    error = e.what();
    return SQLITE_ERROR;
  }
}

}  // namespace sluice::sqlext
