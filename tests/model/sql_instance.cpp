#include "sql_instance.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "reference_model.hpp"

namespace sluice::model {
namespace {

// One statement on `db` with text arguments, stepped once; returns its first column as text
// ("" for NULL or no row). Throws with SQLite's message on an error.
std::string one(sqlite3* db, const char* sql, const std::vector<std::string>& args = {}) {
  sqlite3_stmt* statement = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &statement, nullptr);
  std::string value;
  if (rc == SQLITE_OK) {
    for (std::size_t i = 0; i < args.size(); ++i)
      sqlite3_bind_text(statement, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(statement);
    if (rc == SQLITE_ROW) {
      if (const unsigned char* text = sqlite3_column_text(statement, 0))
        value = reinterpret_cast<const char*>(text);
      rc = SQLITE_DONE;
    }
  }
  const std::string error = sqlite3_errmsg(db);
  sqlite3_finalize(statement);
  if (rc != SQLITE_DONE) throw std::runtime_error("model: SQL " + std::string(sql) + ": " + error);
  return value;
}

}  // namespace

std::string sql_extension() {
  const char* path = std::getenv("SLUICE_MODEL_SQLEXT");
  return path != nullptr ? path : "";
}

SqlInstance::SqlInstance(const std::string& path, const SequenceConfig& config,
                         const InstanceConfig& instance, CallSink& sink, std::string extension)
    : path_(path),
      config_(config),
      instance_(instance),
      sink_(sink),
      extension_(std::move(extension)) {
  open();
  // The C++ instances subscribed the consumer before, with the same retry policy: sluice_subscribe
  // asks it again, every field (a different one is refused), and the SQL consumer retries by it.
  const RetryPolicy& retry = config_.retry;
  for (const auto& [consumer, topics] : instance_.handles) {
    for (const std::string& topic : topics) {
      one(db_, "SELECT sluice_subscribe(?, ?, ?)",
          {consumer, topic,
           "{\"max_attempts\": " + std::to_string(retry.max_attempts) +
               ", \"initial_backoff_ms\": " + std::to_string(retry.initial_backoff.count()) +
               ", \"max_backoff_ms\": " + std::to_string(retry.max_backoff.count()) +
               ", \"multiplier\": " + std::to_string(retry.multiplier) +
               ", \"jitter\": " + std::to_string(retry.jitter) +
               ", \"seed\": " + std::to_string(retry.seed) + ", \"start_from\": \"" +
               (config_.consumer(consumer).oldest ? "oldest" : "now") + "\"}"});
    }
  }
}

SqlInstance::~SqlInstance() { sqlite3_close_v2(db_); }

void SqlInstance::open() {
  if (sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    const std::string error = sqlite3_errmsg(db_);
    sqlite3_close_v2(db_);
    throw std::runtime_error("model: opening " + path_ + " for SQL consumers: " + error);
  }
  sqlite3_busy_timeout(db_, 5000);
  sqlite3_enable_load_extension(db_, 1);
  char* error = nullptr;
  if (sqlite3_load_extension(db_, extension_.c_str(), nullptr, &error) != SQLITE_OK) {
    const std::string message = error != nullptr ? error : "?";
    sqlite3_free(error);
    throw std::runtime_error("model: loading " + extension_ + ": " + message);
  }
  watch_transaction(db_, sink_);
}

std::vector<SqlInstance::Claimed> SqlInstance::claim(const std::string& consumer) {
  const int limit = std::min(config_.batch_size, 100);
  const std::string json = one(db_, "SELECT sluice_claim(?, ?)", {consumer, std::to_string(limit)});
  std::vector<Claimed> claimed;
  sqlite3_stmt* rows = nullptr;
  sqlite3_prepare_v2(db_,
                     "SELECT json_extract(value, '$.id'), json_extract(value, '$.payload'), "
                     "json_extract(value, '$.attempt') FROM json_each(?)",
                     -1, &rows, nullptr);
  sqlite3_bind_text(rows, 1, json.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(rows) == SQLITE_ROW) {
    Event event;
    event.payload = reinterpret_cast<const char*>(sqlite3_column_text(rows, 1));
    claimed.push_back({reinterpret_cast<const char*>(sqlite3_column_text(rows, 0)),
                       event_number(event), sqlite3_column_int(rows, 2)});
  }
  sqlite3_finalize(rows);
  return claimed;
}

bool SqlInstance::settle(const std::string& consumer, const Claimed& claimed, DrainResult& result) {
  Event event;
  event.id = claimed.id;
  event.payload = "{\"n\":" + std::to_string(claimed.n) + "}";
  // SQL names a consumer by name, not by a subscription: it follows a consumer added again.
  const Scripted scripted =
      sink_.on_call(consumer, config_.consumer(consumer).generation, event, claimed.attempt, db_);
  if (scripted.action == Action::kSnooze)
    throw std::logic_error("model: a consumer SQL drives was scripted to snooze");
  if (scripted.action == Action::kThrottle) {
    one(db_, "SELECT sluice_throttle(?, ?, CAST(? AS INTEGER), ?)",
        {consumer, claimed.id, std::to_string(scripted.snooze.count()), scripted.error});
    return false;
  }
  if (scripted.action == Action::kOk) {
    // The app's write and sluice_done in one transaction.
    one(db_, "BEGIN IMMEDIATE");
    if (scripted.writes) record_application(db_, consumer, claimed.n);
    one(db_, "SELECT sluice_done(?, ?)", {consumer, claimed.id});
    one(db_, "COMMIT");
    ++result.delivered;
    return true;
  }
  if (scripted.writes) {
    // The handler wrote, then failed: the app rolls its write back before sluice_fail.
    one(db_, "BEGIN IMMEDIATE");
    record_application(db_, consumer, claimed.n);
    one(db_, "ROLLBACK");
  }
  const std::string state =
      one(db_, "SELECT sluice_fail(?, ?, ?, ?)",
          {consumer, claimed.id, scripted.error, scripted.permanent() ? "1" : "0"});
  ++(state == "dead" ? result.dead_lettered : result.retried);
  return true;
}

DrainResult SqlInstance::drain() {
  DrainResult result;
  for (bool any = true; any;) {
    any = false;
    for (const auto& [consumer, topics] : instance_.handles) {
      for (const Claimed& claimed : claim(consumer)) {
        any = true;
        if (!settle(consumer, claimed, result)) {
          one(db_, "SELECT sluice_release(?)", {consumer});
          break;
        }
      }
    }
  }
  return result;
}

std::pair<std::string, std::vector<long long>> SqlInstance::leave_mid_claim(std::size_t settle_n,
                                                                            bool release) {
  for (const auto& [consumer, topics] : instance_.handles) {
    const std::vector<Claimed> claimed = claim(consumer);
    if (claimed.empty()) continue;
    DrainResult ignored;
    std::vector<long long> left;
    for (std::size_t i = 0; i < claimed.size(); ++i) {
      if (i < settle_n) {
        settle(consumer, claimed[i], ignored);
      } else {
        left.push_back(claimed[i].n);
      }
    }
    if (release) {
      const std::string given_back = one(db_, "SELECT sluice_release(?)", {consumer});
      if (given_back != std::to_string(left.size())) {
        throw std::runtime_error("model: sluice_release gave back " + given_back + " of " +
                                 std::to_string(left.size()) + " events left claimed");
      }
      return {consumer, left};
    }
    sqlite3_close_v2(db_);
    db_ = nullptr;
    open();
    return {consumer, left};
  }
  return {};
}

}  // namespace sluice::model
